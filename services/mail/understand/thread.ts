/** The thread a message belongs to (RFC 5322 §3.6.4: References, In-Reply-To). */

/** The first msg-id (`<…>`) of a header value, or null. */
function firstMessageId(value: string | undefined): string | null {
  if (!value) return null;
  // References can be long (a deep thread): only its first id matters, found in one linear scan.
  return /<[^<>\s]{1,998}>/.exec(value)?.[0] ?? null;
}

/**
 * The thread id: the first Message-ID of `References` (the thread's root), else of `In-Reply-To`, else
 * the message's own, angle brackets kept. Every message of a thread whose clients keep References
 * shares it.
 */
export function threadIdOf(headers: Readonly<Record<string, string>>, messageId: string): string {
  return firstMessageId(headers.references) ?? firstMessageId(headers["in-reply-to"]) ?? messageId;
}
