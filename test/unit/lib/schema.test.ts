import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { t } from "elysia";
import { Integer, Nullable, Timestamp } from "../../../services/lib/schema.ts";

/** A schema as the OpenAPI document sees it: its JSON, without TypeBox's symbol keys. */
const json = (schema: unknown) => JSON.parse(JSON.stringify(schema));

describe("schema helpers", () => {
  test("Nullable is published exactly as Elysia's t.Nullable", () => {
    expect(json(Nullable(Type.String()))).toEqual(json(t.Nullable(t.String())));
    expect(Value.Check(Nullable(Type.String()), null)).toBe(true);
    expect(Value.Check(Nullable(Type.String()), 1)).toBe(false);
  });

  test("Integer is published exactly as Elysia's t.Integer and accepts the numbers we send", () => {
    expect(json(Integer())).toEqual(json(t.Integer()));
    expect(Value.Check(Integer(), 42)).toBe(true);
    expect(Value.Check(Integer(), 4.2)).toBe(false);
  });

  test("Timestamp is an RFC 3339 date-time string", () => {
    expect(json(Timestamp)).toEqual({ type: "string", format: "date-time" });
  });
});
