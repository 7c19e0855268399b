/** buildEventBody: the registry's map step builds the body; every failure becomes the event's last error. */
import { describe, expect, test } from "bun:test";
import { MapperRuntimeError } from "../../../mapper/index.ts";
import type { AppContext } from "../../../services/context.ts";
import { buildEventBody, type StoredMessage } from "../../../services/delivery/build-body.ts";
import { manualClock } from "../../../services/lib/clock.ts";
import { formatDeadReason } from "../../../services/lib/dead-reasons.ts";
import type { Pipeline } from "../../../services/lib/pipeline.ts";
import { makeMessage } from "../../support/messages.ts";

function context(runMapper: AppContext["runMapper"]): AppContext {
  const logger = { warn() {}, info() {}, error() {}, debug() {} };
  return { clock: manualClock(), runMapper, logger } as unknown as AppContext;
}
const event = {
  id: "0190b3a0-0000-7000-8000-000000000001",
  projectId: "prj_1",
  routeId: "rte_1",
  createdAt: new Date(),
};
const message: StoredMessage = { parsed: makeMessage(), rawSizeBytes: 10, sourceType: "api", envelope: null };
const custom = (output: unknown): Pipeline => ({
  steps: [{ name: "map.custom_json", args: { version: "v1", output } }],
});

describe("buildEventBody", () => {
  test("a generic pipeline gives the generic@1 JSON text", async () => {
    const built = await buildEventBody(
      context(async () => null),
      event,
      { steps: [{ name: "map.generic_json", args: {} }] },
      message,
    );
    expect(built.ok).toBe(true);
    if (built.ok) {
      expect(built.contentType).toBe("application/json");
      expect(JSON.parse(built.body).event.route_id).toBe("rte_1");
    }
  });

  test("a custom mapper's output is sent as JSON, and no output as null", async () => {
    expect(
      await buildEventBody(
        context(async () => ({ a: 1 })),
        event,
        custom(1),
        message,
      ),
    ).toMatchObject({ ok: true, body: '{"a":1}' });
    expect(
      await buildEventBody(
        context(async () => undefined),
        event,
        custom(1),
        message,
      ),
    ).toMatchObject({ ok: true, body: "null" });
  });

  const failures: [string, Pipeline, AppContext["runMapper"], string][] = [
    [
      "no final map step",
      { steps: [{ name: "remove_fields", args: { paths: ["html"] } }] },
      async () => null,
      "pipeline_error: the pipeline has no final map.* step",
    ],
    [
      "an unknown map step",
      { steps: [{ name: "map.discord_simple", args: {} }] },
      async () => null,
      "pipeline_error: the pipeline has no final map.* step",
    ],
    [
      "an unknown transform",
      {
        steps: [
          { name: "summarize_text", args: {} },
          { name: "map.generic_json", args: {} },
        ],
      },
      async () => null,
      "pipeline_error: unknown pipeline step summarize_text",
    ],
    [
      "a mapper guard overrun",
      custom(1),
      () => Promise.reject(new MapperRuntimeError("mapper.output_too_large")),
      "mapper:mapper.output_too_large",
    ],
    [
      "a mapper code that crossed a worker boundary",
      custom(1),
      () => Promise.reject(Object.assign(new Error("x"), { code: "mapper.call_timeout" })),
      "mapper:mapper.call_timeout",
    ],
    [
      "a mapper pool failure",
      custom(1),
      () => Promise.reject(new Error("worker exited")),
      "mapper:mapper.unavailable (worker exited)",
    ],
  ];
  test.each(failures)("%s is the event's last error", async (_name, pipeline, runMapper, lastError) => {
    const built = await buildEventBody(context(runMapper), event, pipeline, message);
    expect(built.ok).toBe(false);
    expect(built.ok ? null : formatDeadReason(built.reason)).toBe(lastError);
  });
});
