import { describe, expect, test } from "bun:test";
import { FormatRegistry } from "@sinclair/typebox";
import "../../services/api/app.ts";
import "../../services/api/formats.ts";
import { isUuid } from "../../services/lib/ids.ts";

describe("API string formats", () => {
  test("once the API is loaded, 'uuid' is our pattern check, not @elysiajs/openapi's zod-backed one", () => {
    expect(FormatRegistry.Get("uuid")).toBe(isUuid);
  });

  test("uuid accepts the RFC 9562 layout in any version and case, and nothing else", () => {
    for (const ok of [
      "0b8f7e3c-6a1d-4c2e-9f3a-1b2c3d4e5f60",
      "01890a5d-ac96-774b-bcce-b302099a8057",
      "3f2a1b4c-5d6e-8f70-8123-456789abcdef",
      "0B8F7E3C-6A1D-4C2E-9F3A-1B2C3D4E5F60",
    ])
      expect(isUuid(ok)).toBe(true);
    for (const bad of [
      "",
      "not-a-uuid",
      "0b8f7e3c6a1d4c2e9f3a1b2c3d4e5f60",
      "0b8f7e3c-6a1d-4c2e-9f3a-1b2c3d4e5f6",
    ])
      expect(isUuid(bad)).toBe(false);
  });
});
