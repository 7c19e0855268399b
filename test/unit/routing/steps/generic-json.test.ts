/** `map.generic_json`: no arguments, and the generic@1 body of the event. */
import { describe, expect, test } from "bun:test";
import { buildGenericBody } from "../../../../services/routing/generic-body.ts";
import { genericJsonStep } from "../../../../services/routing/steps/generic-json.ts";
import { makeMessage } from "../../../support/messages.ts";
import { eventCreatedAt, expectIssues, expectSchemaAgrees, mapInput } from "./support.ts";

describe("map.generic_json", () => {
  test("rejects arguments to map.generic_json with their path", () => {
    expectIssues({ steps: [{ name: "map.generic_json", args: { pretty: true } }] }, [
      { path: "/pipeline/steps/0/args/pretty", message: /unknown argument/ },
    ]);
  });

  test("builds the generic@1 body of the event as JSON", () => {
    expect(genericJsonStep.build({}, mapInput())).toEqual({
      kind: "json",
      contentType: "application/json",
      value: buildGenericBody({
        event: {
          id: mapInput().event?.id ?? "",
          project_id: "prj_1",
          route_id: "rte_1",
          created_at: eventCreatedAt,
        },
        message: makeMessage(),
        rawSizeBytes: 1234,
        sourceType: "smtp",
        envelope: { mail_from: "a@example.com", rcpt_to: ["b@in.localhost"] },
      }),
    });
  });

  test("needs an event (a preview has none)", () => {
    expect(() => genericJsonStep.build({}, mapInput({ event: null }))).toThrow(/event/);
  });
});

describe("map.generic_json schema", () => {
  test.each([
    [{}, true],
    [{ pretty: true }, false],
  ] as [Record<string, unknown>, boolean][])("%j: schema and validator both say valid=%p", (args, valid) => {
    expectSchemaAgrees(genericJsonStep, args, valid);
  });
});
