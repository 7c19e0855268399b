/**
 * `call.extract.tables`: tables of an HTML or text body with header detection and lookups by normalized
 * row and column keys. HTML `<table>`s (rowspan/colspan expanded into the matrix, layout and navigation
 * tables rejected) and, with `include_html_grids`, ARIA `role="table"|"grid"` and inline-CSS
 * `display: table` structures; text TSV, pipe (Markdown) and boxed ASCII tables.
 *
 * HTML is parsed with htmlparser2 (domhandler DOM): parse5's tree building took most of the 100 ms call
 * budget on 1 MB of table markup by itself, and table rows parse the same way with both.
 */
import type { Element, ParentNode } from "domhandler";
import { decodeHTML } from "entities";
import { parseDocument } from "htmlparser2";
import { collapse, descendants, descendantsWithin, isElement, isHidden, visibleText } from "./dom.ts";
import { helperInput, registerFunction } from "./registry.ts";

export const TABLE_DEFAULTS = {
  min_rows: 2,
  min_columns: 2,
  min_grid_confidence: 0.75,
  max_tables: 20,
  max_rows: 500,
  max_columns: 50,
} as const;
/** Hard ceilings whatever the arguments say. */
const CEILING = { max_tables: 100, max_rows: 5_000, max_columns: 200 } as const;
/** Largest rowspan/colspan honoured. */
const MAX_SPAN = 1_000;
/** Longest cell text kept (characters). */
const MAX_CELL_CHARS = 4_000;

type HeaderMode = "auto" | "first_row" | "first_column" | "both" | "none";
type Source =
  | "html_table"
  | "html_aria_table"
  | "html_css_table"
  | "html_repeated_grid"
  | "html_label_grid"
  | "text_tsv"
  | "text_pipe"
  | "text_ascii";

interface Options {
  headerMode: HeaderMode;
  grids: boolean;
  gridMode: "strict" | "off" | "lenient";
  minRows: number;
  minColumns: number;
  minGridConfidence: number;
  maxTables: number;
  maxRows: number;
  maxColumns: number;
  deduplicate: boolean;
}

/** One grid slot: its text and where the cell that covers it starts. */
interface Slot {
  value: string;
  header: boolean;
  originRow: number;
  originCol: number;
  rowSpan: number;
  colSpan: number;
}

/** A table before headers are resolved. */
interface RawTable {
  source: Source;
  caption: string | null;
  confidence: number;
  grid: Slot[][];
  /** header hints from markup: row 0 made of <th>/<thead>, column 0 made of <th> */
  thRow: boolean;
  thColumn: boolean;
  /** a separator line under row 0 (pipe tables) */
  ruledHeader: boolean;
  selectorHint: string | null;
  details: Record<string, unknown>;
}

export interface TableHeader {
  index: number;
  text: string;
  normalized: string;
  lookup_key: string;
}

// ---------- keys ----------

const ZERO_WIDTH = /[\u200b-\u200d\u2060\ufeff\u00ad]/g;

/** Header text → key: trimmed, entity-decoded, zero-width-stripped, case-folded, non-word runs → `_`. */
export function normalizeHeader(text: string): string {
  return decodeHTML(text)
    .replace(ZERO_WIDTH, "")
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "_")
    .replace(/^_+|_+$/g, "");
}

/** Headers of one axis with unique lookup keys: fallbacks `row_N`/`column_N`, digit prefix, `_2` suffixes. */
function headersOf(texts: { index: number; text: string }[], axis: "row" | "column"): TableHeader[] {
  const used = new Map<string, number>();
  return texts.map(({ index, text }) => {
    const normalized = normalizeHeader(text);
    let key =
      normalized === ""
        ? `${axis}_${index}`
        : /^\p{N}/u.test(normalized)
          ? `${axis}_${normalized}`
          : normalized;
    const seen = used.get(key) ?? 0;
    used.set(key, seen + 1);
    if (seen > 0) {
      let n = seen + 1;
      while (used.has(`${key}_${n}`)) n++;
      key = `${key}_${n}`;
      used.set(key, 1);
    }
    return { index, text, normalized, lookup_key: key };
  });
}

// ---------- header detection ----------

const NUMERIC = /^[\s$€£¥%+\-−.,:/()#0-9]*[0-9][\s$€£¥%+\-−.,:/()#0-9a-z]*$/i;
const looksLabel = (s: string) => s.trim() !== "" && !NUMERIC.test(s);
const distinct = (xs: string[]) => new Set(xs.map(normalizeHeader)).size === xs.length;

function detectHeaders(t: RawTable): "first_row" | "first_column" | "both" | "none" {
  const rows = t.grid.length;
  const first = t.grid[0] ?? [];
  let row = t.thRow || t.ruledHeader;
  let col = t.thColumn;
  if (!row && rows >= 2) {
    // A first row of distinct labels over rows that hold at least one number or differ from it.
    const texts = first.map((s) => s.value);
    row =
      texts.every(looksLabel) &&
      distinct(texts) &&
      t.grid.slice(1).some((r) => r.some((s) => NUMERIC.test(s.value)));
  }
  if (!col && rows >= 2 && (first.length ?? 0) >= 2) {
    const texts = t.grid.slice(row ? 1 : 0).map((r) => r[0]?.value ?? "");
    col = texts.length > 0 && texts.every(looksLabel) && distinct(texts) && row;
  }
  return row && col ? "both" : row ? "first_row" : col ? "first_column" : "none";
}

// ---------- building the result ----------

function buildTable(t: RawTable, index: number, o: Options) {
  const matrix = t.grid.map((r) => r.map((s) => s.value));
  const rowCount = matrix.length;
  const columnCount = matrix[0]?.length ?? 0;
  const strategy = o.headerMode === "auto" ? detectHeaders(t) : o.headerMode;
  const hasRow = strategy === "first_row" || strategy === "both";
  const hasCol = strategy === "first_column" || strategy === "both";
  const firstRow = headersOf(
    (matrix[0] ?? []).map((text, i) => ({ index: i, text })),
    "column",
  );
  const firstColumn = headersOf(
    matrix.map((r, i) => ({ index: i, text: r[0] ?? "" })),
    "row",
  );
  const dataRows = [...Array(rowCount).keys()].slice(hasRow ? 1 : 0);
  const dataCols = [...Array(columnCount).keys()].slice(hasCol ? 1 : 0);
  const colHeaders = hasRow
    ? headersOf(
        dataCols.map((i) => ({ index: i, text: matrix[0]?.[i] ?? "" })),
        "column",
      )
    : [];
  const rowHeaders = hasCol
    ? headersOf(
        dataRows.map((i) => ({ index: i, text: matrix[i]?.[0] ?? "" })),
        "row",
      )
    : [];
  const colKey = new Map<number, string>();
  if (hasRow) for (const h of colHeaders) colKey.set(h.index, h.lookup_key);
  else for (const i of dataCols) colKey.set(i, `column_${i}`);
  const rowKey = new Map<number, string>();
  if (hasCol) for (const h of rowHeaders) rowKey.set(h.index, h.lookup_key);
  else for (const i of dataRows) rowKey.set(i, `row_${i}`);

  const cell = (r: number, c: number) => {
    const s = t.grid[r]?.[c] as Slot;
    const origin = s.originRow === r && s.originCol === c;
    return {
      row_index: r,
      column_index: c,
      row_lookup_key: rowKey.get(r) as string,
      column_lookup_key: colKey.get(c) as string,
      value: s.value,
      row_span: s.rowSpan,
      col_span: s.colSpan,
      span_origin: origin ? null : { row_index: s.originRow, column_index: s.originCol },
      is_span_origin: origin,
    };
  };
  const byRow: Record<string, Record<string, string>> = {};
  const byColumn: Record<string, Record<string, string>> = {};
  for (const c of dataCols) byColumn[colKey.get(c) as string] = {};
  const cellsByCol: ReturnType<typeof cell>[][] = dataCols.map(() => []);
  const rows = dataRows.map((r) => {
    const rk = rowKey.get(r) as string;
    const values: Record<string, string> = {};
    const cells = dataCols.map((c, j) => {
      const x = cell(r, c);
      values[x.column_lookup_key] = x.value;
      (byColumn[x.column_lookup_key] as Record<string, string>)[rk] = x.value;
      (cellsByCol[j] as ReturnType<typeof cell>[]).push(x);
      return x;
    });
    byRow[rk] = values;
    return { index: r, lookup_key: rk, values, cells };
  });
  const cols = dataCols.map((c, j) => {
    const ck = colKey.get(c) as string;
    return { index: c, lookup_key: ck, values: byColumn[ck] as Record<string, string>, cells: cellsByCol[j] };
  });
  return {
    index,
    source: t.source,
    caption: t.caption,
    confidence: t.confidence,
    row_count: rowCount,
    column_count: columnCount,
    header_strategy: strategy,
    col_headers: colHeaders,
    row_headers: rowHeaders,
    header_candidates: { first_row: firstRow, first_column: firstColumn },
    rows,
    cols,
    lookup: { by_row: byRow, by_column: byColumn },
    matrix,
    detection: { reason: t.source, selector_hint: t.selectorHint, details: t.details },
  };
}

// ---------- grids ----------

function plainSlot(value: string, r: number, c: number, header = false): Slot {
  return { value, header, originRow: r, originCol: c, rowSpan: 1, colSpan: 1 };
}

/** Rectangular grid of rows of cells (text, header flag, spans), spans expanded; capped. */
function expand(
  rows: { value: string; header: boolean; rowSpan: number; colSpan: number }[][],
  o: Options,
): { grid: Slot[][]; truncated: boolean } {
  const grid: Slot[][] = [];
  let truncated = rows.length > o.maxRows;
  for (let r = 0; r < rows.length && r < o.maxRows; r++) {
    grid[r] ??= [];
    let c = 0;
    for (const cellSpec of rows[r] as {
      value: string;
      header: boolean;
      rowSpan: number;
      colSpan: number;
    }[]) {
      const line = grid[r] as Slot[];
      while (line[c] !== undefined) c++;
      const rs = Math.min(Math.max(cellSpec.rowSpan, 1), MAX_SPAN);
      const cs = Math.min(Math.max(cellSpec.colSpan, 1), MAX_SPAN);
      for (let dr = 0; dr < rs && r + dr < Math.min(rows.length, o.maxRows); dr++) {
        grid[r + dr] ??= [];
        for (let dc = 0; dc < cs; dc++) {
          if (c + dc >= o.maxColumns) {
            truncated = true;
            break;
          }
          (grid[r + dr] as Slot[])[c + dc] = {
            value: cellSpec.value,
            header: cellSpec.header,
            originRow: r,
            originCol: c,
            rowSpan: rs,
            colSpan: cs,
          };
        }
      }
      c += cs;
    }
  }
  const width = Math.min(Math.max(0, ...grid.map((line) => line.length)), o.maxColumns);
  for (let r = 0; r < grid.length; r++) {
    const line = grid[r] as Slot[];
    for (let c = 0; c < width; c++) line[c] ??= plainSlot("", r, c);
    line.length = width;
  }
  return { grid, truncated };
}

// ---------- HTML ----------

const CELL_TAGS = new Set(["td", "th"]);
const TABLE_TAG: ReadonlySet<string> = new Set(["table"]);
const SECTION_TAGS = new Set(["thead", "tbody", "tfoot"]);

function spanOf(v: string | undefined): number {
  const n = Number.parseInt(v ?? "1", 10);
  return Number.isFinite(n) && n > 0 ? n : 1;
}

function hintOf(el: Element): string | null {
  if (el.attribs.id) return `${el.tagName}#${el.attribs.id}`;
  const cls = (el.attribs.class ?? "").trim().split(/\s+/).filter(Boolean)[0];
  return cls ? `${el.tagName}.${cls}` : null;
}

/** Rows of an HTML `<table>` (its own rows only, not a nested table's). */
function tableRows(table: Element): Element[] {
  const rows: Element[] = [];
  const visit = (parent: Element) => {
    for (const n of parent.children) {
      if (!isElement(n) || isHidden(n)) continue;
      if (n.tagName === "tr") rows.push(n);
      else if (SECTION_TAGS.has(n.tagName)) visit(n);
    }
  };
  visit(table);
  return rows;
}

const isLinkOnly = (el: Element) => {
  const kids = el.children.filter((n) => isElement(n) || (n.type === "text" && n.data.trim() !== ""));
  return kids.length === 1 && isElement(kids[0] as Element) && (kids[0] as Element).tagName === "a";
};

function fromHtmlTable(table: Element, o: Options): RawTable | null {
  if (table.attribs.role === "presentation" || table.attribs.role === "none") return null;
  const trs = tableRows(table);
  if (trs.length === 0) return null;
  let thead = false;
  const specs = trs.map((tr) => {
    if ((tr.parent as Element | null)?.tagName === "thead") thead = true;
    return tr.children
      .filter((n): n is Element => isElement(n) && CELL_TAGS.has(n.tagName) && !isHidden(n))
      .map((td) => ({
        el: td,
        value: visibleText(td, MAX_CELL_CHARS).slice(0, MAX_CELL_CHARS),
        header: td.tagName === "th",
        rowSpan: spanOf(td.attribs.rowspan),
        colSpan: spanOf(td.attribs.colspan),
      }));
  });
  // Navigation: every non-empty cell is a lone link.
  const filled = specs.flat().filter((c) => c.value !== "");
  if (filled.length > 0 && filled.every((c) => isLinkOnly(c.el))) return null;
  const { grid, truncated } = expand(specs, o);
  const firstRowHeader = (specs[0] ?? []).length > 0 && (specs[0] ?? []).every((c) => c.header);
  const thColumn =
    specs.length > 1 && specs.slice(firstRowHeader ? 1 : 0).every((r) => r[0]?.header === true);
  const captionEl = table.children.find((n): n is Element => isElement(n) && n.tagName === "caption");
  const cells = grid.flat();
  const empty = cells.filter((s) => s.value === "").length;
  const confidence = cells.length === 0 ? 0 : Math.round((1 - (empty / cells.length) * 0.5) * 100) / 100;
  if (cells.length > 0 && empty / cells.length > 0.6) return null; // mostly spacers: layout
  return {
    source: "html_table",
    caption: captionEl ? visibleText(captionEl) || null : null,
    confidence: firstRowHeader || thead ? 1 : confidence,
    grid,
    thRow: firstRowHeader || thead,
    thColumn,
    ruledHeader: false,
    selectorHint: hintOf(table),
    details: truncated ? { truncated: true } : {},
  };
}

/** Opt-in grids: ARIA `role=table|grid` with `role=row` and cell roles, and inline `display: table`. */
function fromGrid(el: Element, o: Options): RawTable | null {
  const aria = el.attribs.role === "table" || el.attribs.role === "grid";
  const rowTest = aria
    ? (n: Element) => n.attribs.role === "row"
    : (n: Element) => /display\s*:\s*table-row\b/i.test(n.attribs.style ?? "");
  const cellTest = aria
    ? (n: Element) => ["cell", "gridcell", "columnheader", "rowheader"].includes(n.attribs.role ?? "")
    : (n: Element) => /display\s*:\s*table-cell\b/i.test(n.attribs.style ?? "");
  const rows: Element[] = [];
  for (const d of descendants(el)) if (rowTest(d) && !isHidden(d)) rows.push(d);
  const specs = rows.map((row) =>
    [...descendants(row)]
      .filter((c) => cellTest(c) && !isHidden(c))
      .map((c) => ({
        value: visibleText(c, MAX_CELL_CHARS),
        header: c.attribs.role === "columnheader" || c.attribs.role === "rowheader",
        rowSpan: 1,
        colSpan: 1,
      })),
  );
  if (specs.length === 0) return null;
  const widths = specs.map((r) => r.length);
  const regular = widths.filter((w) => w === widths[0]).length / widths.length;
  const cells = specs.flat();
  const filled = cells.filter((c) => c.value !== "").length / Math.max(cells.length, 1);
  const confidence = Math.round(regular * filled * 100) / 100;
  const threshold = o.gridMode === "lenient" ? Math.min(o.minGridConfidence, 0.5) : o.minGridConfidence;
  if (confidence < threshold) return null;
  const { grid } = expand(specs, o);
  return {
    source: aria ? "html_aria_table" : "html_css_table",
    caption: el.attribs["aria-label"] ?? null,
    confidence,
    grid,
    thRow: (specs[0] ?? []).length > 0 && (specs[0] ?? []).every((c) => c.header),
    thColumn: false,
    ruledHeader: false,
    selectorHint: hintOf(el),
    details: {},
  };
}

/** Elements whose children are never read as repeated rows (their own structure is a table or a list). */
const NOT_GRID_PARENTS = new Set([
  "table",
  "thead",
  "tbody",
  "tfoot",
  "tr",
  "ul",
  "ol",
  "dl",
  "select",
  "head",
  "html",
]);
/** Elements below one repeated block looked at (a block is a row: it stays small). */
const MAX_BLOCK_NODES = 400;

/** The text leaves of a block: elements with visible text and no element children, in order (capped). */
function leavesOf(block: Element, max: number): string[] | null {
  const out: string[] = [];
  let seen = 0;
  const stack: Element[] = [block];
  while (stack.length > 0) {
    const el = stack.pop() as Element;
    if (++seen > MAX_BLOCK_NODES || out.length > max) return null;
    if (isHidden(el)) continue;
    const kids = el.children.filter((n): n is Element => isElement(n) && n.tagName !== "br");
    if (kids.length === 0 || kids.every((k) => k.tagName === "img")) {
      const text = visibleText(el, MAX_CELL_CHARS);
      if (text !== "") out.push(text);
      continue;
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i] as Element);
  }
  return out;
}

/**
 * A cheap first look: enough element children that have element children of their own (a block with
 * at least two cells is never a leaf), so the rows of a grid are not each tried as a grid.
 */
function mayHoldBlocks(el: Element, o: Options): boolean {
  const fewest = Math.max(o.minRows, o.gridMode === "lenient" ? 2 : 3);
  let n = 0;
  for (const c of el.children) {
    if (isElement(c) && c.children.some((k) => isElement(k) && k.tagName !== "br") && ++n >= fewest)
      return true;
  }
  return false;
}

const signature = (el: Element) =>
  `${el.tagName}.${(el.attribs.class ?? "").trim().split(/\s+/).sort().join(".")}`;

/**
 * Opt-in grids of repeated sibling blocks (`html_label_grid`, `html_repeated_grid`): the largest group of
 * element children of `parent` with the same tag and classes, each a row. When every block alternates the
 * same labels with values (`Order` `A1` `Total` `$5`), the labels are the header row; otherwise the blocks'
 * text leaves are the cells, and the grid's confidence is the share of blocks with the usual number of
 * leaves times the share of filled cells.
 */
function fromRepeated(parent: Element, o: Options): RawTable | null {
  const groups = new Map<string, Element[]>();
  for (const n of parent.children) {
    if (!isElement(n) || isHidden(n) || n.tagName === "br") continue;
    const key = signature(n);
    const list = groups.get(key);
    if (list === undefined) groups.set(key, [n]);
    else list.push(n);
  }
  let blocks: Element[] = [];
  for (const g of groups.values()) if (g.length > blocks.length) blocks = g;
  const fewest = Math.max(o.minRows, o.gridMode === "lenient" ? 2 : 3);
  if (blocks.length < fewest) return null;
  const leaves: string[][] = [];
  for (const b of blocks.slice(0, o.maxRows)) {
    const l = leavesOf(b, o.maxColumns * 2);
    if (l === null) return null;
    leaves.push(l);
  }
  const cell = (value: string) => ({ value, header: false, rowSpan: 1, colSpan: 1 });
  const base = (
    source: Source,
    specs: ReturnType<typeof cell>[][],
    confidence: number,
    thRow: boolean,
  ): RawTable => ({
    source,
    caption: null,
    confidence,
    grid: expand(specs, o).grid,
    thRow,
    thColumn: false,
    ruledHeader: false,
    selectorHint: hintOf(blocks[0] as Element),
    details: { blocks: blocks.length },
  });
  // Label grid: the same labels, in the same order, in every block.
  const first = leaves[0] as string[];
  const labels = first.filter((_, i) => i % 2 === 0).map((t) => t.replace(/\s*:\s*$/, ""));
  const sameLabels = leaves.every(
    (l) =>
      l.length === first.length &&
      l.every((t, i) => i % 2 === 1 || t.replace(/\s*:\s*$/, "") === labels[i / 2]),
  );
  if (first.length >= 2 * o.minColumns && first.length % 2 === 0 && sameLabels && labels.every(looksLabel)) {
    const header = labels.map((t) => ({ ...cell(t), header: true }));
    const rows = leaves.map((l) => l.filter((_, i) => i % 2 === 1).map(cell));
    return base("html_label_grid", [header, ...rows], 1, true);
  }
  // Repeated grid: the usual number of leaves per block is the column count.
  const counts = new Map<number, number>();
  for (const l of leaves) counts.set(l.length, (counts.get(l.length) ?? 0) + 1);
  let width = 0;
  let most = 0;
  for (const [w, n] of counts) if (n > most || (n === most && w > width)) [width, most] = [w, n];
  if (width < o.minColumns) return null;
  const regular = most / leaves.length;
  const kept = leaves.filter((l) => l.length === width);
  if (new Set(kept.map((l) => JSON.stringify(l))).size === 1) return null; // one block repeated: decoration
  const confidence = Math.round(regular * 100) / 100;
  const threshold = o.gridMode === "lenient" ? Math.min(o.minGridConfidence, 0.5) : o.minGridConfidence;
  if (confidence < threshold) return null;
  return base(
    "html_repeated_grid",
    kept.map((l) => l.map(cell)),
    confidence,
    false,
  );
}

/**
 * Candidate tables of an HTML document in document order. A table that holds another table is layout
 * and skipped (the inner tables are read). Lazy: the caller stops once it has `max_tables`.
 */
function* fromHtml(html: string, o: Options): Generator<RawTable> {
  const doc = parseDocument(html) as unknown as ParentNode;
  const found: Element[] = [];
  const layout = new Set<Element>();
  const hidden = new Set<Element>();
  const repeated = new Set<Element>();
  for (const [el, table] of descendantsWithin(doc, TABLE_TAG)) {
    const parent = el.parent as Element | null;
    if (isHidden(el) || (parent !== null && hidden.has(parent))) {
      hidden.add(el);
      continue;
    }
    const grids = o.grids && o.gridMode !== "off";
    const grid =
      grids &&
      (el.attribs.role === "table" ||
        el.attribs.role === "grid" ||
        /display\s*:\s*table\s*(;|$)/i.test(el.attribs.style ?? ""));
    if (grids && !grid && table === null && !NOT_GRID_PARENTS.has(el.tagName) && mayHoldBlocks(el, o)) {
      found.push(el);
      repeated.add(el);
      continue;
    }
    if (el.tagName !== "table" && !grid) continue;
    found.push(el);
    if (el.tagName === "table" && table !== null) layout.add(table);
  }
  for (const el of found) {
    if (layout.has(el)) continue;
    const t = repeated.has(el)
      ? fromRepeated(el, o)
      : el.tagName === "table"
        ? fromHtmlTable(el, o)
        : fromGrid(el, o);
    if (t !== null) yield t;
  }
}

// ---------- text ----------

const PIPE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;
const ASCII_RULE = /^\s*\+[-=+]+\+\s*$/;

function splitPipe(line: string): string[] {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|")) s = s.slice(0, -1);
  return s.split("|").map((c) => c.trim());
}

function textTable(source: Source, rows: string[][], ruled: boolean, o: Options): RawTable {
  const { grid, truncated } = expand(
    rows.map((r) =>
      r.map((value) => ({
        value: collapse(value).slice(0, MAX_CELL_CHARS),
        header: false,
        rowSpan: 1,
        colSpan: 1,
      })),
    ),
    o,
  );
  return {
    source,
    caption: null,
    confidence: 1,
    grid,
    thRow: false,
    thColumn: false,
    ruledHeader: ruled,
    selectorHint: null,
    details: truncated ? { truncated: true } : {},
  };
}

function fromText(text: string, o: Options): RawTable[] {
  const lines = text.split(/\r\n|\r|\n/);
  const out: RawTable[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.includes("\t") && line.split("\t").filter((c) => c.trim() !== "").length >= 2) {
      const width = line.split("\t").length;
      const rows: string[][] = [];
      while (
        i < lines.length &&
        (lines[i] as string).includes("\t") &&
        (lines[i] as string).split("\t").length === width
      ) {
        rows.push((lines[i] as string).split("\t"));
        i++;
      }
      out.push(textTable("text_tsv", rows, false, o));
      continue;
    }
    const trimmed = line.trim();
    if (ASCII_RULE.test(trimmed) || (trimmed.startsWith("|") && trimmed.indexOf("|", 1) > 0)) {
      const rows: string[][] = [];
      let ascii = false;
      let ruled = false;
      while (i < lines.length) {
        const l = (lines[i] as string).trim();
        if (ASCII_RULE.test(l)) {
          ascii = true;
          if (rows.length === 1) ruled = true;
        } else if (PIPE_RULE.test(l) && l.includes("-")) {
          if (rows.length === 1) ruled = true;
        } else if (l.startsWith("|") || (l.includes("|") && rows.length > 0 && !ascii)) {
          rows.push(splitPipe(l));
        } else break;
        i++;
      }
      if (rows.length > 0) out.push(textTable(ascii ? "text_ascii" : "text_pipe", rows, ruled, o));
      continue;
    }
    i++;
  }
  return out;
}

// ---------- the helper ----------

const num = (v: unknown, fallback: number, ceiling: number) =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.min(Math.floor(v), ceiling) : fallback;

function options(args: Readonly<Record<string, unknown>>): Options {
  const hm = args.header_mode;
  const gm = args.html_grid_mode;
  return {
    headerMode: hm === "first_row" || hm === "first_column" || hm === "both" || hm === "none" ? hm : "auto",
    grids: args.include_html_grids === true,
    gridMode: gm === "off" || gm === "lenient" ? gm : "strict",
    minRows: num(args.min_rows, TABLE_DEFAULTS.min_rows, CEILING.max_rows),
    minColumns: num(args.min_columns, TABLE_DEFAULTS.min_columns, CEILING.max_columns),
    minGridConfidence:
      typeof args.min_grid_confidence === "number"
        ? args.min_grid_confidence
        : TABLE_DEFAULTS.min_grid_confidence,
    maxTables: num(args.max_tables, TABLE_DEFAULTS.max_tables, CEILING.max_tables),
    maxRows: Math.max(1, num(args.max_rows, TABLE_DEFAULTS.max_rows, CEILING.max_rows)),
    maxColumns: Math.max(1, num(args.max_columns, TABLE_DEFAULTS.max_columns, CEILING.max_columns)),
    deduplicate: args.deduplicate !== false,
  };
}

/** The helper itself; exported for tests and the benchmark. */
export function extractTables(args: Readonly<Record<string, unknown>>, root: unknown) {
  const o = options(args);
  const mode = args.mode === "html" || args.mode === "text" ? args.mode : "auto";
  const html = mode === "text" ? "" : helperInput(args, root, "html");
  function* candidates(): Generator<RawTable> {
    if (html.trim() !== "") yield* fromHtml(html, o);
    if (mode !== "html") yield* fromText(helperInput(args, root, "text"), o);
  }
  const seen = new Set<string>();
  const tables: ReturnType<typeof buildTable>[] = [];
  for (const t of candidates()) {
    if (tables.length >= o.maxTables) break;
    if (t.grid.length < o.minRows || (t.grid[0]?.length ?? 0) < o.minColumns) continue;
    if (t.grid.every((r) => r.every((s) => s.value === ""))) continue;
    if (o.deduplicate) {
      const key = JSON.stringify(t.grid.map((r) => r.map((s) => s.value)));
      if (seen.has(key)) continue;
      seen.add(key);
    }
    tables.push(buildTable(t, tables.length, o));
  }
  return { tables, summary: { table_count: tables.length } };
}

registerFunction("extract.tables", {
  description:
    "Extracts tables from message.html and message.text with header detection and lookups: {tables: [{matrix, rows, cols, lookup: {by_row, by_column}, …}], summary}.",
  args: {
    mode: {
      type: "string",
      enum: ["auto", "html", "text"],
      description: "auto (default: HTML tables, then text tables), html or text",
    },
    html: { type: "string", description: "HTML to read (default message.html)" },
    text: { type: "string", description: "text to read (default message.text)" },
    header_mode: {
      type: "string",
      enum: ["auto", "first_row", "first_column", "both", "none"],
      description: "which headers a table has (default auto: detected)",
    },
    include_html_grids: {
      type: "boolean",
      description: 'also read ARIA role="table"/"grid" and inline display:table structures (default false)',
    },
    html_grid_mode: {
      type: "string",
      enum: ["strict", "off", "lenient"],
      description: "how readily grids are accepted (default strict)",
    },
    min_rows: { type: "number", description: "fewest rows of a table (default 2)" },
    min_columns: { type: "number", description: "fewest columns of a table (default 2)" },
    min_grid_confidence: { type: "number", description: "lowest confidence of an HTML grid (default 0.75)" },
    max_tables: { type: "number", description: "most tables returned (default 20)" },
    max_rows: { type: "number", description: "most rows kept per table (default 500)" },
    max_columns: { type: "number", description: "most columns kept per table (default 50)" },
    deduplicate: { type: "boolean", description: "drop tables with the same matrix (default true)" },
  },
  run: extractTables,
});
