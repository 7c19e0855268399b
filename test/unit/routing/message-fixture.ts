import type { NormalizedMessage } from "../../../services/lib/message.ts";

/** A realistic normalised message; override any field per test. */
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
