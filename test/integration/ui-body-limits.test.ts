/**
 * The dashboard reads a POST body only for a signed-in browser (or the tiny sign-in form), and within a
 * limit: an anonymous 8 MiB form is never read (the browser is sent to sign in), a signed-in form over
 * the limit is a 413 refused unread when its length is declared.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FORM_MAX_BYTES, SIGN_IN_MAX_BYTES } from "../../services/ui/body.ts";
import { createTestApp, type TestApp } from "../support/app.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A body that counts how many bytes were pulled from it. */
function counted(size: number) {
  const read = { bytes: 0 };
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  let left = size;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (left <= 0) return c.close();
      const part = chunk.subarray(0, Math.min(left, chunk.byteLength));
      left -= part.byteLength;
      read.bytes += part.byteLength;
      c.enqueue(part);
    },
  });
  return { body, read };
}

describe("dashboard request bodies", () => {
  let app: TestApp;
  let cookie: string;

  async function call(path: string, init: RequestInit) {
    const res = await app.api.handle(new Request(`http://localhost${path}`, init));
    return { res, text: await res.text() };
  }

  beforeAll(async () => {
    app = await createTestApp("pglite");
    const { apiKey } = await app.newProject("forms");
    const form = await call("/ui/sign-in", {});
    const anon = (form.res.headers.get("set-cookie") ?? "").split(";")[0] as string;
    const csrf = form.text.match(/name="_csrf" value="([^"]+)"/)?.[1] as string;
    const signedIn = await call("/ui/sign-in", {
      method: "POST",
      headers: { ...FORM, cookie: anon },
      body: new URLSearchParams({ _csrf: csrf, api_key: apiKey }),
    });
    expect(signedIn.res.status).toBe(303);
    cookie = (signedIn.res.headers.get("set-cookie") ?? "").split(";")[0] as string;
  });
  afterAll(async () => {
    await app?.close();
  });

  test("an 8 MiB form from a browser that is not signed in is not read; it is sent to sign in", async () => {
    const { body, read } = counted(8 * 1024 * 1024);
    const r = await call("/ui/routes", {
      method: "POST",
      headers: FORM,
      body,
      duplex: "half",
    } as RequestInit);
    expect(r.res.status).toBe(303);
    expect(r.res.headers.get("location")).toStartWith("/ui/sign-in");
    expect(read.bytes).toBeLessThanOrEqual(128 * 1024);
  });

  test("a sign-in form over its limit is 413", async () => {
    const r = await call("/ui/sign-in", {
      method: "POST",
      headers: { ...FORM, "content-length": String(SIGN_IN_MAX_BYTES + 1) },
      body: "a".repeat(SIGN_IN_MAX_BYTES + 1),
    });
    expect(r.res.status).toBe(413);
    expect(JSON.parse(r.text).error.code).toBe("request.too_large");
  });

  test("a signed-in form over the form limit is 413, refused unread when declared", async () => {
    const { body, read } = counted(FORM_MAX_BYTES + 1);
    const r = await call("/ui/routes", {
      method: "POST",
      headers: { ...FORM, cookie, "content-length": String(FORM_MAX_BYTES + 1) },
      body,
      duplex: "half",
    } as RequestInit);
    expect(r.res.status).toBe(413);
    expect(read.bytes).toBeLessThanOrEqual(128 * 1024);
  });
});
