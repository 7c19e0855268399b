/**
 * The attacks of the attack suite (tools/chaos/attacks.ts) that go through the HTTP API or look at the
 * instance from outside: the attachment swap by Message-ID (download URL and mapper preview), the
 * capture of an endpoint URL carrying credentials, bodies sent before credentials, the API reference's
 * assets, `/metrics` and the SSRF guard. Each returns report lines; none throws for an unsafe outcome,
 * only for a broken harness.
 */
import { randomBytes } from "node:crypto";
import * as cheerio from "cheerio";
import { blockedReason } from "../../services/lib/ssrf.ts";
import { eventually } from "../../test/support/eventually.ts";
import { buildMail, sha256 } from "../../test/support/raw-mail.ts";
import { api, brief, type Instance, mib, peakGrowth, type Receiver } from "./attack-kit.ts";
import { type Outcome, smtpSend } from "./attacks-smtp.ts";
import { type ChaosProject, setupProject } from "./cluster.ts";

const safeIf = (ok: boolean): Outcome["verdict"] => (ok ? "safe" : "UNSAFE");

/** `422 <code>` when `setupProject` failed because the endpoint was refused; null for other failures. */
function creationRefusal(err: unknown): string | null {
  const m = /^POST \/v1\/endpoints: (\d+) (.*)$/s.exec(err instanceof Error ? err.message : "");
  if (!m) return null;
  const code = /"code":"([^"]+)"/.exec(m[2] ?? "")?.[1];
  return code ? `${m[1]} ${code}` : (m[1] as string);
}

/** The receiver's first delivery of a Message-ID (waits for it). */
export function delivered(receiver: Receiver, messageId: string) {
  return eventually(`a delivery of ${messageId}`, () => receiver.of(messageId)[0], 30_000, { everyMs: 20 });
}

/**
 * A genuine invoice with an attachment, then an attacker's message over SMTP (no credentials) with the
 * same Message-ID and another file in the same place. Safe: the genuine event's attachment id still
 * serves the genuine bytes (or the request is 409 `messages.ambiguous`), and preview by `message_id`
 * shows the genuine message or is 409. Also checks the attempt capture of an endpoint URL with a token.
 */
export async function attachmentSwap(
  inst: Instance,
  p: ChaosProject,
  receiver: Receiver,
): Promise<Outcome[]> {
  const messageId = `<invoice.${Date.now()}.${process.pid}@billing.example>`;
  const genuine = randomBytes(4096);
  const forged = randomBytes(4096);
  const mail = (subject: string, content: Uint8Array) =>
    buildMail({
      messageId,
      to: p.inbound,
      subject,
      attachments: [{ filename: "invoice.pdf", contentType: "application/pdf", content }],
    });
  const first = await smtpSend(inst.smtpPort, p.inbound, mail("Invoice 42", genuine));
  if (first.code !== 250) throw new Error(`the genuine message was refused: ${first.raw}`);
  const event = await delivered(receiver, messageId);
  const attId = event.attachments.find((a) => a.filename === "invoice.pdf")?.id;
  if (!attId) throw new Error(`the genuine delivery names no invoice.pdf: ${JSON.stringify(event)}`);
  const second = await smtpSend(inst.smtpPort, p.inbound, mail("Invoice 42 (forged)", forged));
  const sent = `attacker's message ${second.code}`;

  const path = `/v1/messages/${encodeURIComponent(messageId)}/attachments/${attId}/url`;
  const url = await api(inst.base, "GET", path, { key: p.apiKey });
  let download: Outcome;
  if (url.status === 200) {
    const bytes = new Uint8Array(await (await fetch(String(url.json?.url))).arrayBuffer());
    const hash = sha256(bytes);
    const which = hash === sha256(genuine) ? "genuine" : hash === sha256(forged) ? "ATTACKER'S" : "other";
    download = {
      name: "attachment swap (download)",
      outcome: `${sent}; ${attId} of the genuine event downloads the ${which} bytes`,
      verdict: safeIf(which === "genuine"),
    };
  } else {
    download = {
      name: "attachment swap (download)",
      outcome: `${sent}; URL for ${attId}: ${brief(url)}`,
      verdict: safeIf(brief(url) === "409 messages.ambiguous"),
    };
  }
  const preview = await api(inst.base, "POST", "/v1/mapper/preview", {
    key: p.apiKey,
    body: {
      config: { version: "v1", output: { subject: { var: "message.subject" } } },
      message_id: messageId,
    },
  });
  const subject = (preview.json?.output as { subject?: string } | undefined)?.subject;
  const previewLine: Outcome = {
    name: "attachment swap (preview)",
    outcome: `preview by message_id: ${brief(preview)}${subject === undefined ? "" : ` subject "${subject}"`}`,
    verdict: safeIf(brief(preview) === "409 messages.ambiguous" || subject === "Invoice 42"),
  };
  return [download, previewLine, await captureRedaction(inst, event.eventId, p.apiKey)];
}

/** The URL an event's first attempt captured (waits for the attempt). */
async function capturedUrl(base: string, eventId: string, key: string): Promise<string> {
  const attempts = await eventually(
    `an attempt of event ${eventId}`,
    async () => {
      const a = await api(base, "GET", `/v1/events/${eventId}/attempts`, { key });
      return (a.json?.items as { request_capture?: { url?: string } }[] | undefined)?.[0];
    },
    30_000,
    { everyMs: 50 },
  );
  return String(attempts.request_capture?.url);
}

async function captureRedaction(inst: Instance, eventId: string, key: string): Promise<Outcome> {
  const url = await capturedUrl(inst.base, eventId, key);
  const parts = [`?token=secret123 captured as ${url}`];
  let leaked = url.includes("secret123");
  // userinfo: refused when the endpoint is created, or else masked in the capture
  const withUser = `http://user:pass@127.0.0.1:${new URL(url).port}/hook?token=secret123`;
  try {
    const q = await setupProject(inst.base, withUser, 5);
    const sent = await api(inst.base, "POST", "/v1/messages", {
      key: q.apiKey,
      body: new TextDecoder().decode(buildMail({ to: q.inbound })),
      headers: { "content-type": "message/rfc822" },
    });
    const id = (sent.json?.events as { id: string }[] | undefined)?.[0]?.id;
    const captured = await capturedUrl(inst.base, String(id), q.apiKey);
    leaked ||= captured.includes("secret123") || captured.includes("pass");
    parts.push(`user:pass@ captured as ${captured}`);
  } catch (err) {
    const refused = creationRefusal(err);
    if (!refused) throw err;
    parts.push(`user:pass@ refused at creation (${refused})`);
  }
  return { name: "capture redaction", outcome: parts.join("; "), verdict: safeIf(!leaked) };
}

/** `bytes` of nested JSON under the body-depth guard: an array of objects nested 50 deep. */
export function nestedJson(bytes: number): string {
  const unit = `${'{"a":'.repeat(50)}1${"}".repeat(50)}`;
  return `[${Array.from({ length: Math.max(1, Math.floor(bytes / (unit.length + 1))) }, () => unit).join(",")}]`;
}

/**
 * `copies` unauthenticated nested-JSON bodies of `bytes` each at once to a project operation, and two
 * bodies only a parser can refuse (cut short; nested past the depth guard): all must be 401, which
 * shows no body was parsed before the key was checked, without the child's RSS growing past
 * max(64 MiB, 2 × the bytes sent). Then an authenticated 2 MiB JSON body (413 `request.too_large`) and
 * a 2 MiB raw message upload, the one operation with the message limit (202).
 */
export async function preAuthBody(
  inst: Instance,
  key: string,
  bytes: number,
  copies: number,
): Promise<Outcome[]> {
  const body = nestedJson(bytes);
  const run = await peakGrowth(inst.pid, () =>
    Promise.all(Array.from({ length: copies }, () => api(inst.base, "POST", "/v1/endpoints", { body }))),
  );
  const cut = await api(inst.base, "POST", "/v1/endpoints", { body: '{"url": "http://' });
  const deep = await api(inst.base, "POST", "/v1/endpoints", {
    body: `${"[".repeat(1000)}${"]".repeat(1000)}`,
  });
  const statuses = [...new Set(run.result.map(brief))].join(", ");
  const bound = Math.max(64 * 1048576, 2 * body.length * copies);
  const unauth: Outcome = {
    name: "pre-auth body",
    outcome:
      `${copies} × ${mib(body.length)} nested JSON without a key: ${statuses}; RSS +${mib(run.growth)} ` +
      `(bound ${mib(bound)}); cut-short JSON ${brief(cut)}; 1000-deep JSON ${brief(deep)}`,
    verdict: safeIf([...run.result, cut, deep].every((a) => a.status === 401) && run.growth <= bound),
  };
  const big = { url: "http://127.0.0.1:9/hook", description: "x".repeat(2 * 1048576) };
  const authed = await api(inst.base, "POST", "/v1/endpoints", { key, body: big });
  const limit: Outcome = {
    name: "json body limit",
    outcome: `2 MiB JSON with a key: ${brief(authed)}`,
    verdict: safeIf(brief(authed) === "413 request.too_large"),
  };
  const raw = buildMail({ text: "y".repeat(2 * 1048576) });
  const upload = await api(inst.base, "POST", "/v1/messages", {
    key,
    body: new TextDecoder().decode(raw),
    headers: { "content-type": "message/rfc822" },
  });
  const message: Outcome = {
    name: "message upload limit",
    outcome: `${mib(raw.length)} raw message to POST /v1/messages: ${brief(upload)}`,
    verdict: safeIf(upload.status === 202),
  };
  return [unauth, limit, message];
}

/** Safe when the `/v1/docs` HTML loads no script or stylesheet from another origin. */
export async function docsAssets(inst: Instance): Promise<Outcome> {
  const res = await api(inst.base, "GET", "/v1/docs");
  const $ = cheerio.load(res.text);
  const refs = [
    ...$("script[src]").map((_, el) => $(el).attr("src")),
    ...$("link[href]")
      .filter((_, el) => /stylesheet|preload|modulepreload/i.test($(el).attr("rel") ?? ""))
      .map((_, el) => $(el).attr("href")),
  ].filter((r): r is string => typeof r === "string");
  const external = refs.filter(
    (r) => /^(https?:)?\/\//i.test(r) && new URL(r, inst.base).origin !== inst.base,
  );
  return {
    name: "docs assets",
    outcome: `/v1/docs ${res.status}, ${refs.length} script/stylesheet references, external: ${external.join(" ") || "none"}`,
    verdict: safeIf(res.status === 200 && external.length === 0),
  };
}

/** Safe when `/metrics` is 401 without the bearer token and 200 with it. */
export async function metricsToken(inst: Instance, token: string): Promise<Outcome> {
  const without = await api(inst.base, "GET", "/metrics");
  const wrong = await api(inst.base, "GET", "/metrics", { headers: { authorization: "Bearer nope" } });
  const right = await api(inst.base, "GET", "/metrics", { headers: { authorization: `Bearer ${token}` } });
  return {
    name: "metrics token",
    outcome: `without token ${without.status}, wrong token ${wrong.status}, right token ${right.status}`,
    verdict: safeIf(without.status === 401 && wrong.status === 401 && right.status === 200),
  };
}

/**
 * An endpoint at each address (on an instance with ALLOW_PRIVATE_ENDPOINTS=false), then a message:
 * safe when creation is refused or the attempt says `ssrf_blocked`. Only pass URLs whose target is on
 * this machine (loopback spelled another way): if the guard let one through, the attempt would still
 * stay on loopback. Public addresses are checked with {@link ssrfGuardOnly}, never dialled.
 */
export async function ssrf(inst: Instance, urls: string[]): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const url of urls) {
    let p: ChaosProject;
    try {
      p = await setupProject(inst.base, url, 1);
    } catch (err) {
      const refused = creationRefusal(err);
      if (!refused) throw err;
      out.push({ name: `ssrf ${url}`, outcome: `refused at creation: ${refused}`, verdict: "safe" });
      continue;
    }
    const sent = await api(inst.base, "POST", "/v1/messages", {
      key: p.apiKey,
      body: new TextDecoder().decode(buildMail({ to: p.inbound })),
      headers: { "content-type": "message/rfc822" },
    });
    const id = (sent.json?.events as { id: string }[] | undefined)?.[0]?.id;
    const attempt = await eventually(
      `an attempt to ${url}`,
      async () => {
        const a = await api(inst.base, "GET", `/v1/events/${id}/attempts`, { key: p.apiKey });
        return (
          a.json?.items as { http_status: number; response_capture?: { network_error?: string } }[]
        )?.[0];
      },
      30_000,
      { everyMs: 50 },
    );
    const error = attempt.response_capture?.network_error ?? `HTTP ${attempt.http_status}`;
    out.push({
      name: `ssrf ${url}`,
      outcome: `created; ${error.startsWith("ssrf_blocked") ? "refused at delivery" : "DIALLED"}: ${error}`,
      verdict: safeIf(error.startsWith("ssrf_blocked")),
    });
  }
  return out;
}

/**
 * The SSRF guard's verdict on public addresses that must be refused (Azure's WireServer and the like),
 * asked in-process: a real delivery attempt would leave this machine if the guard ever regressed.
 */
export function ssrfGuardOnly(addresses: string[]): Outcome[] {
  return addresses.map((address) => {
    const reason = blockedReason(address);
    return {
      name: `ssrf ${address} (guard, not dialled)`,
      outcome: reason ? `refused: ${reason}` : "ALLOWED by the guard",
      verdict: safeIf(reason !== null),
    };
  });
}
