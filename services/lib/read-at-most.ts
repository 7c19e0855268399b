/**
 * Reading a request body with a ceiling: the bytes of `stream` up to `limit`, or the error `tooLarge()`
 * returns as soon as more arrived — the rest is cancelled, never read, so no more than the limit plus
 * one network chunk is ever held. Used by the API's JSON bodies and the dashboard's forms.
 */
export async function readStreamAtMost(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Not awaited: a peer that stops sending must not hold the answer back.
      reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}
