/** `map.custom_json`: the mapper's checks re-rooted, the evaluation root it runs on, and its failures. */

import { describe, expect, test } from "bun:test";
import { MapperRuntimeError } from "../../../../mapper/index.ts";
import { withUnderstanding } from "../../../../services/lib/understanding.ts";
import { type MapperConfigValidator, validatePipeline } from "../../../../services/routing/pipeline.ts";
import { customJsonStep, mapperInput } from "../../../../services/routing/steps/custom-json.ts";
import { MapperUnavailableError, type RunMapper } from "../../../../services/routing/steps/index.ts";
import { makeMessage } from "../../../support/messages.ts";
import { custom, expectIssues, expectSchemaAgrees, mapInput } from "./support.ts";

describe("map.custom_json validation", () => {
  test("rejects mapper errors, re-rooted under the step args", () => {
    expectIssues({ steps: [{ name: "remove_fields", args: { paths: ["html"] } }, custom("no")] }, [
      { path: "/pipeline/steps/1/args/output/x", message: /unknown operator/ },
    ]);
  });

  test("uses the given base path and re-roots a mapper error at the args root", () => {
    const rootError: MapperConfigValidator = () => ({
      ok: false,
      errors: [{ path: "", message: "bad config" }],
    });
    expect(
      validatePipeline({ steps: [custom()] }, { validateMapperConfig: rootError }, "/route/pipeline"),
    ).toEqual([{ path: "/route/pipeline/steps/0/args", message: "bad config" }]);
  });

  test("without a mapper validator, map.custom_json args are only checked to be an object", () => {
    expect(validatePipeline({ steps: [custom("anything")] })).toEqual([]);
  });
});

describe("map.custom_json build", () => {
  test("runs the config on the evaluation root delivery and previews share, and returns its JSON", async () => {
    const seen: unknown[] = [];
    const runMapper: RunMapper = async (config, root) => {
      seen.push(config, root);
      return { ok: 1 };
    };
    const config = { version: "v1", output: { ok: 1 } };
    const out = await customJsonStep.build(config, mapInput(), { runMapper });
    expect(out).toEqual({ kind: "json", contentType: "application/json", value: { ok: 1 } });
    expect(seen[0]).toBe(config);
    expect(seen[1]).toEqual({
      message: withUnderstanding(makeMessage()),
      ctx: {
        event_id: mapInput().event?.id,
        project_id: "prj_1",
        route_id: "rte_1",
        source_type: "smtp",
        raw_size_bytes: 1234,
        now: "2025-03-01T10:00:08.000Z",
        envelope: {
          mail_from: "a@example.com",
          rcpt_to: ["b@in.localhost"],
          helo: null,
          client_ip: null,
          tag: null,
        },
      },
      meta: { source: "smtp", raw_size_bytes: 1234, received_at: makeMessage().received_at },
    });
  });

  test("a preview root has null event and route ids and the caller's meta keys over the pipeline's", () => {
    const root = mapperInput(mapInput({ event: null, meta: { source: "test", extra: 1 } }));
    expect(root.ctx).toMatchObject({ event_id: null, route_id: null, project_id: "prj_1" });
    expect(root.meta).toEqual({
      source: "test",
      raw_size_bytes: 1234,
      received_at: makeMessage().received_at,
      extra: 1,
    });
  });

  const failures: [string, unknown, (err: unknown) => void][] = [
    [
      "a MapperRuntimeError is thrown as it is",
      new MapperRuntimeError("mapper.nodes_exceeded"),
      (e) => {
        expect(e).toBeInstanceOf(MapperRuntimeError);
      },
    ],
    [
      "an error that kept only its mapper code is thrown as it is",
      Object.assign(new Error("x"), { code: "mapper.call_timeout" }),
      (e) => {
        expect((e as { code: string }).code).toBe("mapper.call_timeout");
      },
    ],
    [
      "any other runner failure is MapperUnavailableError with its message",
      new Error("worker exited"),
      (e) => {
        expect(e).toBeInstanceOf(MapperUnavailableError);
        expect((e as Error).message).toBe("worker exited");
      },
    ],
  ];
  test.each(failures)("%s", async (_name, thrown, check) => {
    const runMapper: RunMapper = () => Promise.reject(thrown);
    const err = await customJsonStep.build({}, mapInput(), { runMapper }).catch((e: unknown) => e);
    check(err);
  });
});

describe("map.custom_json schema", () => {
  // The outline only; the mapper's validator (stubbed out here) decides everything inside a config.
  test.each([
    [{ version: "v1", output: 1 }, true],
    [{ version: "v1", vars: [{ name: "a", expr: 1 }], output: { var: "vars.a" } }, true],
  ] as [Record<string, unknown>, boolean][])("%j: schema and validator both say valid=%p", (args, valid) => {
    expectSchemaAgrees(customJsonStep, args, valid);
  });
});
