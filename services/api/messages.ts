/**
 * `POST /v1/messages` (docs/api.md): the HTTP intake. The body is the raw RFC 5322 message; it goes
 * through the same intake seam as SMTP (ingest/intake.ts) with `source_type = "api"` and no envelope.
 * The project is the API key's, never resolved from recipients; the intake's outcome is rendered as
 * 202 with the message's events, or its failure as the error body (api/errors.ts).
 *
 * The body is never JSON-parsed (`parse: "none"`). Large bodies are streamed to the spool directory
 * instead of being buffered, so concurrent uploads cost disk, not memory.
 */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { MAX_RAW_BYTES, messageTooLarge } from "../ingest/ingest.ts";
import type { Intake, IntakeOutcome, IntakeRaw } from "../ingest/intake.ts";
import { removeSpoolFile, spoolDir, spoolStream } from "../ingest/spool.ts";
import { AppError } from "../lib/errors.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, EventStatus } from "./schemas.ts";

/** Media types accepted for the raw message; a missing type is taken as octet-stream (RFC 9110 §8.3). */
export const RAW_MESSAGE_TYPES = ["message/rfc822", "application/octet-stream", "text/plain"] as const;

/** Bodies up to this size are read in memory; larger ones are spooled to disk. */
const IN_MEMORY_BODY_BYTES = 256 * 1024;

export const IngestedMessage = t.Object({
  message_id: t.String({
    description: "the Message-ID header value with angle brackets (synthetic if absent)",
  }),
  duplicate: t.Boolean({
    description: "true when the same raw message was already ingested; `events` are the existing ones",
  }),
  events: t.Array(
    t.Object({
      id: t.String({ format: "uuid" }),
      route_id: t.String(),
      status: EventStatus,
    }),
  ),
});

function checkMediaType(header: string | null): void {
  if (header === null || header.trim() === "") return;
  const base = header.split(";")[0]?.trim().toLowerCase() ?? "";
  if (!RAW_MESSAGE_TYPES.some((type) => type === base)) {
    throw new AppError(
      "request.unsupported_media_type",
      `send the raw message with Content-Type: message/rfc822 (got ${base || "none"})`,
    );
  }
}

/** The HTTP rendering of an intake outcome for one project: its result, or its failure thrown. */
function resultOf(outcome: IntakeOutcome) {
  if (outcome.failure) throw outcome.failure.error;
  const [result] = outcome.accepted;
  if (!result) throw new Error("the intake returned neither a result nor a failure");
  return result;
}

/** Ingests the raw body of one request; the spool file (if any) is removed afterwards. */
async function ingestRequest(intake: Intake, projectId: string, request: Request) {
  const accept = async (raw: IntakeRaw) => resultOf(await intake.acceptForProject(projectId, raw, null));
  checkMediaType(request.headers.get("content-type"));
  const lengthHeader = request.headers.get("content-length");
  const length = lengthHeader === null ? null : Number(lengthHeader);
  if (length !== null && length > MAX_RAW_BYTES) throw messageTooLarge();
  if (length !== null && length <= IN_MEMORY_BODY_BYTES) {
    return accept(new Uint8Array(await request.arrayBuffer()));
  }
  if (!request.body) throw new AppError("ingest.unparseable", "message is empty");
  const spooled = await spoolStream(request.body, spoolDir(intake.ctx.config.dataDir), {
    limit: MAX_RAW_BYTES,
    overflow: "stop",
  });
  try {
    if (spooled.exceeded) throw messageTooLarge();
    return await accept({ path: spooled.path, size: spooled.size });
  } finally {
    await removeSpoolFile(spooled.path);
  }
}

/** Mounts `POST /messages` under the `/v1` prefix of `createApi`; uploads go through `intake`. */
export function messagesApi(ctx: AppContext, intake: Intake) {
  return new Elysia({ tags: ["messages"] }).use(projectAuth(ctx, { rawBody: true })).post(
    "/messages",
    async ({ auth, request, status }) => {
      const result = await ingestRequest(intake, auth.projectId, request);
      return status(202, {
        message_id: result.messageId,
        duplicate: result.duplicate,
        events: result.events,
      });
    },
    {
      parse: "none",
      response: {
        202: IngestedMessage,
        413: ErrorBody,
        415: ErrorBody,
        422: ErrorBody,
        503: ErrorBody,
        507: ErrorBody,
        ...authErrors,
      },
      detail: {
        summary: "Ingest one raw RFC 5322 message",
        description:
          "Body: the raw message bytes with `Content-Type: message/rfc822` (`application/octet-stream` and " +
          "`text/plain` are accepted too). The message is stored, matched against every enabled route, and " +
          "one event per matched route is created before the 202 is sent. Sending the same bytes again " +
          "(same Message-ID and same raw bytes) returns 202 with the existing events and `duplicate: true`. " +
          "Over 50 MiB → 413 `ingest.too_large`; storage quota reached → 507 `ingest.quota_exceeded`; " +
          "transient failure → 503 `ingest.unavailable` (safe to retry).",
        security: [{ apiKey: [] }],
        requestBody: {
          required: true,
          content: {
            "message/rfc822": { schema: { type: "string", format: "binary" } },
            "application/octet-stream": { schema: { type: "string", format: "binary" } },
          },
        },
      },
    },
  );
}
