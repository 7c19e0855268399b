/**
 * `format=flowed` plain text (RFC 3676) unwrapped into its paragraphs.
 *
 * A line ending in a space is soft-broken and joins the next line of the same quote depth (§4.2);
 * a leading space is stuffing and removed (§4.4); with `delsp=yes` the space before a soft break
 * was added by the sender and is removed too (§4.5). The signature separator `-- ` is never
 * joined (§4.3). Linear: each line is visited once and the result is joined once.
 */
export function unwrapFlowed(text: string, delSp: boolean): string {
  const out: string[] = [];
  let open: { depth: number; pieces: string[] } | null = null;
  const close = (): void => {
    if (!open) return;
    out.push(`${open.depth > 0 ? `${">".repeat(open.depth)} ` : ""}${open.pieces.join("")}`);
    open = null;
  };
  for (const line of text.split(/\r?\n/)) {
    let depth = 0;
    while (line.charCodeAt(depth) === 0x3e) depth++;
    let content = line.slice(depth);
    if (content.startsWith(" ")) content = content.slice(1);
    if (open && open.depth !== depth) close();
    const soft = content.endsWith(" ") && content !== "-- ";
    if (soft && delSp) content = content.slice(0, -1);
    if (open) open.pieces.push(content);
    else open = { depth, pieces: [content] };
    if (!soft) close();
  }
  close();
  return out.join("\n");
}
