import { describe, expect, test } from "bun:test";
import {
  ambiguousMessageId,
  isMessagePk,
  MAX_AMBIGUOUS_LISTED,
  messageIdCandidates,
} from "../../../services/attachments/tokens.ts";
import { newId } from "../../../services/lib/ids.ts";

describe("lookups by Message-ID", () => {
  test("a Message-ID matches with or without its angle brackets", () => {
    expect(messageIdCandidates(" a@b ")).toEqual(["a@b", "<a@b>"]);
    expect(messageIdCandidates("<a@b>")).toEqual(["<a@b>"]);
  });

  test("a stored message's own id is told apart from a Message-ID", () => {
    expect(isMessagePk(newId("msg"))).toBe(true);
    expect(isMessagePk(` ${newId("msg")} `)).toBe(true);
    expect(isMessagePk("<msg_abc@x>")).toBe(false);
    expect(isMessagePk("msg_abc@x")).toBe(false);
    expect(isMessagePk(newId("ep"))).toBe(false);
  });

  test("messages.ambiguous is a 409 listing the msg_… ids at /message_id", () => {
    const err = ambiguousMessageId(" <a@b> ", ["msg_1", "msg_2"]);
    expect(err.code).toBe("messages.ambiguous");
    expect(err.status).toBe(409);
    expect(err.message).toContain("<a@b> names 2 stored messages");
    expect(err.details).toEqual([
      { path: "/message_id", message: "msg_1" },
      { path: "/message_id", message: "msg_2" },
    ]);
  });

  test("a Message-ID shared by very many messages lists the first few and says there are more", () => {
    const pks = Array.from({ length: MAX_AMBIGUOUS_LISTED + 1 }, (_, i) => `msg_${i}`);
    const err = ambiguousMessageId("a@b", pks);
    expect(err.details).toHaveLength(MAX_AMBIGUOUS_LISTED);
    expect(err.message).toContain(`more than ${MAX_AMBIGUOUS_LISTED}`);
  });
});
