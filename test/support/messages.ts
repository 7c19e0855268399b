/**
 * The normalised message (`NormalizedMessage`, what the parser produces and routes, mappers and
 * deliveries read) for tests that do not go through the parser: one factory, `makeMessage`, and the
 * numbered plain message seeded in bulk for delivery tests.
 *
 * Invariants:
 * - `makeMessage()` is fixed: tests compare against its values, so changing one is changing tests.
 * - `sampleMessage(n)` has a Message-ID unique to the call, so seeded messages never collide on the
 *   idempotency key, and subject and text carry `n`, so tests can tell messages apart.
 */
import type { NormalizedMessage } from "../../services/lib/message.ts";

/**
 * A realistic message: an invoice with a PDF attachment and an inline logo, a repeated header and a
 * list header. Override any field per test.
 */
export function makeMessage(overrides: Partial<NormalizedMessage> = {}): NormalizedMessage {
  return {
    message_id: "<abc123@mail.example.com>",
    message_id_is_synthetic: false,
    subject: "Invoice #42 for March",
    date: "2025-03-01T10:00:00Z",
    received_at: "2025-03-01T10:00:05Z",
    from: [{ email: "billing@mail.acme.io", name: "ACME Billing" }],
    to: [{ email: "inbox+invoices@in.localhost", name: "" }],
    cc: [{ email: "accounts@example.com", name: "Accounts" }],
    reply_to: [],
    headers: {
      "message-id": "<abc123@mail.example.com>",
      "x-priority": "1 (Highest)",
      "x-tag": "alpha, beta",
      "list-id": "<news.acme.io>",
    },
    headers_multi: { "x-tag": ["alpha", "beta"] },
    text: "Please find the invoice attached.",
    html: "<p>Please find the invoice attached.</p>",
    attachments: [
      {
        id: "att_2",
        filename: "invoice.pdf",
        content_type: "application/pdf",
        size: 52_000,
        is_inline: false,
        sha256: "a".repeat(64),
      },
      {
        id: "att_1",
        filename: "logo.png",
        content_type: "image/png",
        size: 900,
        is_inline: true,
        content_id: "<logo@acme>",
      },
    ],
    ...overrides,
  };
}

/** The `n`-th of a batch of small plain messages (no cc, no HTML, no attachments), unique per call. */
export function sampleMessage(n: number, overrides: Partial<NormalizedMessage> = {}): NormalizedMessage {
  return makeMessage({
    message_id: `<seed-${n}-${crypto.randomUUID()}@example.com>`,
    subject: `Seeded message ${n}`,
    date: "2026-01-01T10:00:00Z",
    received_at: "2026-01-01T10:00:05Z",
    from: [{ email: "sender@example.com", name: "Sender" }],
    to: [{ email: "inbox@in.localhost", name: "" }],
    cc: [],
    headers: { subject: `Seeded message ${n}` },
    headers_multi: {},
    text: `Hello ${n}`,
    html: "",
    attachments: [],
    ...overrides,
  });
}
