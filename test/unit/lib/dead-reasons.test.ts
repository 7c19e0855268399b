import { describe, expect, test } from "bun:test";
import {
  DEAD_REASON_CODES,
  type DeadReason,
  endpointDeleted,
  formatDeadReason,
  mapperFailed,
  messageErased,
  messageMissing,
  pipelineError,
  routeDeleted,
  signingSecretDeleted,
} from "../../../services/lib/dead-reasons.ts";

describe("dead reasons", () => {
  // The stored `last_error` texts are published (docs/delivery.md): these are the exact strings.
  test.each([
    [routeDeleted("rt_1", "attempt"), "route_deleted: route rt_1 was deleted"],
    [routeDeleted("rt_1", "replay"), "route_deleted: route rt_1 was deleted; the replay cannot run"],
    [
      endpointDeleted("ep_1"),
      "endpoint_deleted: endpoint ep_1 was deleted; replay after pointing the route at another endpoint",
    ],
    [
      signingSecretDeleted("kid_1"),
      "signing_secret_deleted: signing secret kid_1 was deleted; replay after giving the route another kid",
    ],
    [messageMissing(), "message_missing: the stored message is gone"],
    [messageErased(), "message_erased: the message was erased; there is nothing to deliver"],
    [
      pipelineError("the pipeline has no final map.* step"),
      "pipeline_error: the pipeline has no final map.* step",
    ],
    [mapperFailed("mapper.output_too_large"), "mapper:mapper.output_too_large"],
    [mapperFailed("mapper.unavailable", "pool closed"), "mapper:mapper.unavailable (pool closed)"],
  ] as [DeadReason, string][])("a %o reason is stored as %p", (reason, text) => {
    expect(formatDeadReason(reason)).toBe(text);
  });

  test("every stored text starts with its code, so the code can be read back from last_error", () => {
    for (const code of DEAD_REASON_CODES) {
      expect(formatDeadReason({ code, detail: "x" })).toStartWith(code);
    }
  });
});
