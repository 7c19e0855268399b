/** Dates of a message's headers as the message model writes them: RFC 3339 UTC, whole seconds. */

/** RFC 3339 UTC with whole seconds and `Z`, or null for an invalid date. */
export function toRfc3339Seconds(date: Date): string | null {
  const time = date.getTime();
  if (Number.isNaN(time)) return null;
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) return null;
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** RFC 5322 §3.3 date-time; comments such as `(PDT)` are dropped before parsing. */
export function parseDateHeader(value: string | undefined): string | null {
  if (!value) return null;
  const cleaned = value
    .replace(/\([^()]*\)/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (!cleaned) return null;
  return toRfc3339Seconds(new Date(cleaned));
}
