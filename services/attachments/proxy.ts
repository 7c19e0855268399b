/**
 * The app-proxy download `GET|HEAD /v1/attachments/{token}` (docs/attachments.md): resolve the token, enforce
 * expiry and single use, then stream the blob with the spec's headers.
 *
 * Order of checks, and why:
 * 1. token unknown (or not of our shape) → 404 `attachments.not_found`;
 * 2. `expires_at <= now` (injected clock) → 410 `attachments.expired`;
 * 3. single-use already used → 410 `attachments.reused`;
 * 4. `planDownload`: a malformed `Range` (400) or one outside the file (416) is refused *before* the
 *    token is consumed, so a client bug never burns a single-use URL;
 * 5. GET of a single-use token: consumed by one conditional UPDATE (`used_at is null and expires_at >
 *    now`), so of any number of concurrent first requests exactly one wins; the rest get 410. A ranged
 *    GET consumes it too (resumable downloads use multi-use URLs).
 * HEAD never consumes: it reads no bytes (RFC 9110 §9.3.2) and lets a client learn size and name first.
 * The project API key plays no part here: the token is the credential (spec, Authentication rule 6).
 */
import { and, eq, gt, isNull } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { attachments, downloadTokens } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { buildDownloadResponse, planDownload } from "./download-response.ts";
import { hashDownloadToken, isWellFormedToken } from "./tokens.ts";

/** One request to the proxy, free of any HTTP framework. */
export interface ProxyDownloadRequest {
  token: string;
  method: "GET" | "HEAD";
  rangeHeader: string | null;
  ifRangeHeader: string | null;
}

/** The token and the attachment it grants. */
interface Grant {
  multiUse: boolean;
  expiresAt: Date;
  usedAt: Date | null;
  blobKey: string;
  size: number;
  filename: string;
  contentType: string;
}

async function findGrant(ctx: AppContext, tokenHash: string): Promise<Grant | null> {
  const [row] = await ctx.database.db
    .select({
      multiUse: downloadTokens.multiUse,
      expiresAt: downloadTokens.expiresAt,
      usedAt: downloadTokens.usedAt,
      blobKey: attachments.blobKey,
      size: attachments.size,
      filename: attachments.filename,
      contentType: attachments.contentType,
    })
    .from(downloadTokens)
    .innerJoin(
      attachments,
      and(
        eq(attachments.messagePk, downloadTokens.messagePk),
        eq(attachments.attachmentId, downloadTokens.attachmentId),
      ),
    )
    .where(eq(downloadTokens.tokenHash, tokenHash))
    .limit(1);
  return row ?? null;
}

/**
 * Marks a single-use token used, atomically: the row changes only if nobody used it yet and it has not
 * expired, so exactly one caller gets `true`. On `false`, re-reads the row to say which rule refused.
 */
async function consumeSingleUse(ctx: AppContext, tokenHash: string, now: Date): Promise<void> {
  const won = await ctx.database.db
    .update(downloadTokens)
    .set({ usedAt: now })
    .where(
      and(
        eq(downloadTokens.tokenHash, tokenHash),
        isNull(downloadTokens.usedAt),
        gt(downloadTokens.expiresAt, now),
      ),
    )
    .returning({ tokenHash: downloadTokens.tokenHash });
  if (won.length === 1) return;
  const [row] = await ctx.database.db
    .select({ usedAt: downloadTokens.usedAt })
    .from(downloadTokens)
    .where(eq(downloadTokens.tokenHash, tokenHash));
  if (row?.usedAt) throw reused();
  if (row) throw expired();
  throw notFound();
}

const notFound = () => new AppError("attachments.not_found", "no attachment for this download URL");
const expired = () => new AppError("attachments.expired", "this download URL has expired");
const reused = () => new AppError("attachments.reused", "this single-use download URL has already been used");

/**
 * Serves one proxy request: a streamed 200/206 (or headers only for HEAD). Throws `AppError` for every
 * refusal (`attachments.not_found` 404, `.expired` 410, `.reused` 410, `.range_invalid` 400,
 * `.range_not_satisfiable` 416 with `Content-Range: bytes *\/<size>`).
 */
export async function serveProxyDownload(ctx: AppContext, req: ProxyDownloadRequest): Promise<Response> {
  if (!isWellFormedToken(req.token)) throw notFound();
  const tokenHash = hashDownloadToken(req.token);
  const grant = await findGrant(ctx, tokenHash);
  if (!grant) throw notFound();
  const now = ctx.clock.now();
  if (grant.expiresAt.getTime() <= now.getTime()) throw expired();
  if (!grant.multiUse && grant.usedAt !== null) throw reused();

  const download = {
    store: ctx.blobs,
    key: grant.blobKey,
    size: grant.size,
    filename: grant.filename,
    contentType: grant.contentType,
    method: req.method,
    rangeHeader: req.rangeHeader,
    ifRangeHeader: req.ifRangeHeader,
  };
  planDownload(download);
  if (req.method === "GET" && !grant.multiUse) await consumeSingleUse(ctx, tokenHash, now);
  return buildDownloadResponse(download);
}
