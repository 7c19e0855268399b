/**
 * Download URLs with `BLOB_STORE=s3` against s3rver (a local S3-compatible server, in process, real
 * sockets): multi-use URLs are presigned storage URLs, single-use ones stay on the app proxy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseDisposition } from "content-disposition";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { seedMessage } from "../support/seed-messages.ts";

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
const S3rver = createRequire(import.meta.url)("s3rver") as new (o: Record<string, unknown>) => S3rverInstance;

const BUCKET = "mailhook-downloads";
const FILE = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 10)) & 0xff);
const sha = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");

let tmp: string;
let s3rver: S3rverInstance;
let endpoint: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "mailhook-attachments-s3-"));
  s3rver = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: join(tmp, "s3rver"),
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const { port } = await s3rver.run();
  endpoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await s3rver?.close();
  await rm(tmp, { recursive: true, force: true });
});

for (const kind of testDbKinds()) {
  describe(`attachment downloads from S3 (${kind})`, () => {
    let app: TestApp;
    let apiKey: string;
    const urlFor = (query: string) =>
      app.request(
        "GET",
        `/v1/messages/${encodeURIComponent("<s3@mail.example>")}/attachments/att_0/url${query}`,
        {
          apiKey,
        },
      );

    beforeAll(async () => {
      app = await createTestApp(kind, {
        env: {
          BLOB_STORE: "s3",
          S3_BUCKET: BUCKET,
          S3_ENDPOINT: endpoint,
          S3_REGION: "us-east-1",
          S3_ACCESS_KEY_ID: "S3RVER",
          S3_SECRET_ACCESS_KEY: "S3RVER",
        },
      });
      const project = await app.newProject("s3");
      apiKey = project.apiKey;
      await seedMessage(app.ctx, {
        projectId: project.id,
        messageId: "<s3@mail.example>",
        attachments: [{ filename: "Ünïcode report.pdf", contentType: "application/pdf", bytes: FILE }],
      });
    }, 60_000);
    afterAll(() => app?.close());

    test("multi_use returns a presigned storage URL that downloads the right bytes", async () => {
      const r = await urlFor("?multi_use=true&ttl_seconds=120");
      expect(r.status, r.text).toBe(200);
      expect(r.body.url.startsWith(`${endpoint}/${BUCKET}/sha256/`)).toBe(true);
      expect(r.body.url).toContain("X-Amz-Signature=");
      expect(r.body.url).toContain("X-Amz-Expires=120");
      expect(r.body.method).toBe("GET");
      expect(r.body.headers).toEqual({});
      expect(Date.parse(r.body.expires_at) - Date.now()).toBeGreaterThan(110_000);
      const res = await fetch(r.body.url);
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(res.status).toBe(200);
      expect(sha(bytes)).toBe(sha(FILE));
      expect(res.headers.get("content-type")).toBe("application/pdf");
      expect(parseDisposition(res.headers.get("content-disposition") ?? "").parameters.filename).toBe(
        "Ünïcode report.pdf",
      );
    });

    test("multi_use presigned URLs default to 300 s", async () => {
      const r = await urlFor("?multi_use=1");
      expect(r.body.url).toContain("X-Amz-Expires=300");
    });

    test("single-use URLs stay on the app proxy and stream from S3, ranges included", async () => {
      const r = await urlFor("");
      expect(r.status, r.text).toBe(200);
      expect(r.body.url).toStartWith("http://127.0.0.1:8080/v1/attachments/");
      const path = new URL(r.body.url).pathname;
      const ranged = await app.api.handle(
        new Request(`http://localhost${path}`, { headers: { range: "bytes=1000-1999" } }),
      );
      expect(ranged.status).toBe(206);
      expect(sha(new Uint8Array(await ranged.arrayBuffer()))).toBe(sha(FILE.subarray(1000, 2000)));
      const again = await app.request("GET", path);
      expect(again.status, again.text).toBe(410);
      expect(again.body.error.code).toBe("attachments.reused");

      const whole = await urlFor("");
      const res = await app.api.handle(new Request(`http://localhost${new URL(whole.body.url).pathname}`));
      expect(res.status).toBe(200);
      expect(sha(new Uint8Array(await res.arrayBuffer()))).toBe(sha(FILE));
    });
  });
}
