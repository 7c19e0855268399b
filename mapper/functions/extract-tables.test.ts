import { describe, expect, test } from "bun:test";
import { compileMapper } from "../index.ts";
import { extractTables, normalizeHeader } from "./extract-tables.ts";

const run = (args: Record<string, unknown>, message: Record<string, unknown> = {}) =>
  extractTables(args, { message }) as unknown as {
    tables: Record<string, any>[];
    summary: { table_count: number };
  };

const tsv = "Item\tQty\tTotal\nWidget\t2\t$10.00\nGadget\t3\t$15.00\n";

describe("call.extract.tables: text", () => {
  test("a TSV table with both headers: lookups, rows, cols, cells, matrix", () => {
    const { tables, summary } = run({ mode: "text" }, { text: tsv });
    expect(summary).toEqual({ table_count: 1 });
    const t = tables[0]!;
    expect(t).toMatchObject({
      index: 0,
      source: "text_tsv",
      caption: null,
      row_count: 3,
      column_count: 3,
      header_strategy: "both",
      matrix: [
        ["Item", "Qty", "Total"],
        ["Widget", "2", "$10.00"],
        ["Gadget", "3", "$15.00"],
      ],
      lookup: {
        by_row: { widget: { qty: "2", total: "$10.00" }, gadget: { qty: "3", total: "$15.00" } },
        by_column: { qty: { widget: "2", gadget: "3" }, total: { widget: "$10.00", gadget: "$15.00" } },
      },
      detection: { reason: "text_tsv", selector_hint: null, details: {} },
    });
    expect(t.col_headers).toEqual([
      { index: 1, text: "Qty", normalized: "qty", lookup_key: "qty" },
      { index: 2, text: "Total", normalized: "total", lookup_key: "total" },
    ]);
    expect(t.row_headers.map((h: { lookup_key: string }) => h.lookup_key)).toEqual(["widget", "gadget"]);
    expect(t.header_candidates.first_row[0]).toEqual({
      index: 0,
      text: "Item",
      normalized: "item",
      lookup_key: "item",
    });
    expect(t.rows[0].values).toEqual({ qty: "2", total: "$10.00" });
    expect(t.rows[0].cells[0]).toEqual({
      row_index: 1,
      column_index: 1,
      row_lookup_key: "widget",
      column_lookup_key: "qty",
      value: "2",
      row_span: 1,
      col_span: 1,
      span_origin: null,
      is_span_origin: true,
    });
    expect(t.cols[1]).toMatchObject({
      index: 2,
      lookup_key: "total",
      values: { widget: "$10.00", gadget: "$15.00" },
    });
  });

  test("pipe and boxed ASCII tables", () => {
    const text = [
      "| Name | Score |",
      "|------|------:|",
      "| Ada  | 10    |",
      "| Bob  | 7     |",
      "",
      "+------+-----+",
      "| Code | Qty |",
      "+======+=====+",
      "| A1   | 4   |",
      "| B2   | 5   |",
      "+------+-----+",
    ].join("\n");
    const { tables } = run({ mode: "text" }, { text });
    expect(tables.map((t) => t.source)).toEqual(["text_pipe", "text_ascii"]);
    expect(tables[0]!.lookup.by_row).toEqual({ ada: { score: "10" }, bob: { score: "7" } });
    expect(tables[1]!.lookup.by_column.qty).toEqual({ a1: "4", b2: "5" });
  });

  test("header_mode overrides detection; none uses synthetic keys", () => {
    const { tables } = run({ mode: "text", header_mode: "none" }, { text: tsv });
    expect(tables[0]!.header_strategy).toBe("none");
    expect(tables[0]!.lookup.by_row.row_0).toEqual({ column_0: "Item", column_1: "Qty", column_2: "Total" });
    const first = run({ mode: "text", header_mode: "first_row" }, { text: tsv }).tables[0]!;
    expect(first.lookup.by_row.row_1).toEqual({ item: "Widget", qty: "2", total: "$10.00" });
  });

  test("min_rows, min_columns, max_tables, max_rows", () => {
    expect(run({ mode: "text", min_rows: 4 }, { text: tsv }).tables).toEqual([]);
    expect(run({ mode: "text", min_columns: 4 }, { text: tsv }).tables).toEqual([]);
    const two = `${tsv}\nA\tB\n1\t2\n`;
    expect(run({ mode: "text", max_tables: 1 }, { text: two }).tables).toHaveLength(1);
    expect(run({ mode: "text", max_rows: 2 }, { text: tsv }).tables[0]!.matrix).toHaveLength(2);
  });
});

describe("call.extract.tables: HTML", () => {
  const html = `<html><body>
    <table id="inv"><caption>Invoice</caption>
      <thead><tr><th>Item</th><th>Q1</th><th>Q1</th><th>2026</th><th></th></tr></thead>
      <tbody>
        <tr><td rowspan="2">Widget</td><td colspan="2">5</td><td>1</td><td>x</td></tr>
        <tr><td>3</td><td>4</td><td>&amp;</td><td>y</td></tr>
      </tbody>
    </table>
    <table role="presentation"><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>
    <table><tr><td><a href="/">Home</a></td><td><a href="/x">Shop</a></td></tr>
      <tr><td><a href="/y">Help</a></td><td><a href="/z">Contact</a></td></tr></table>
    <table><tr><td><table><tr><th>K</th><th>V</th></tr><tr><td>a</td><td>1</td></tr></table></td></tr></table>
    <div style="display:none"><table><tr><th>H</th><th>I</th></tr><tr><td>1</td><td>2</td></tr></table></div>
  </body></html>`;

  test("thead headers, rowspan/colspan expansion with span metadata, caption and key rules", () => {
    const { tables } = run({ mode: "html" }, { html });
    expect(tables.map((t) => t.source)).toEqual(["html_table", "html_table"]);
    const t = tables[0]!;
    expect(t.caption).toBe("Invoice");
    expect(t.header_strategy).toBe("first_row");
    expect(t.detection.selector_hint).toBe("table#inv");
    expect(t.matrix).toEqual([
      ["Item", "Q1", "Q1", "2026", ""],
      ["Widget", "5", "5", "1", "x"],
      ["Widget", "3", "4", "&", "y"],
    ]);
    expect(t.col_headers.map((h: { lookup_key: string }) => h.lookup_key)).toEqual([
      "item",
      "q1",
      "q1_2",
      "column_2026",
      "column_4",
    ]);
    const spanned = t.rows[1].cells[0];
    expect(spanned).toMatchObject({
      row_index: 2,
      column_index: 0,
      value: "Widget",
      row_span: 2,
      col_span: 1,
      span_origin: { row_index: 1, column_index: 0 },
      is_span_origin: false,
    });
    expect(t.rows[0].cells[2]).toMatchObject({ col_span: 2, is_span_origin: false });
    // Layout (presentation, a table of tables), navigation and hidden tables are rejected; the inner
    // table of the layout table is read.
    expect(tables[1]!.matrix).toEqual([
      ["K", "V"],
      ["a", "1"],
    ]);
  });

  test("auto mode reads HTML first and drops the same table found again in the text", () => {
    const html2 =
      "<table><tr><th>Item</th><th>Qty</th><th>Total</th></tr><tr><td>Widget</td><td>2</td><td>$10.00</td></tr><tr><td>Gadget</td><td>3</td><td>$15.00</td></tr></table>";
    const { tables } = run({}, { html: html2, text: tsv });
    expect(tables.map((t) => t.source)).toEqual(["html_table"]);
    expect(run({ deduplicate: false }, { html: html2, text: tsv }).tables).toHaveLength(2);
  });

  test("ARIA grids only with include_html_grids", () => {
    const aria = `<div role="table" aria-label="Scores">
      <div role="row"><span role="columnheader">Name</span><span role="columnheader">Score</span></div>
      <div role="row"><span role="cell">Ada</span><span role="cell">10</span></div>
      <div role="row"><span role="cell">Bob</span><span role="cell">7</span></div></div>`;
    expect(run({ mode: "html" }, { html: aria }).tables).toEqual([]);
    const t = run({ mode: "html", include_html_grids: true }, { html: aria }).tables[0]!;
    expect(t.source).toBe("html_aria_table");
    expect(t.caption).toBe("Scores");
    expect(t.lookup.by_row.ada).toEqual({ score: "10" });
  });
});

describe("call.extract.tables: repeated blocks (opt-in)", () => {
  const cards = `<div class="list">${[
    ["A-1", "$5"],
    ["A-2", "$7"],
    ["A-3", "$9"],
  ]
    .map(
      ([o, t]) =>
        `<div class="card"><div class="l">Order:</div><div class="v">${o}</div><div class="l">Total</div><div class="v">${t}</div></div>`,
    )
    .join("")}</div>`;
  const rows = `<div>${[
    ["Widget", "2", "$10"],
    ["Gadget", "3", "$15"],
    ["Doohickey", "1", "$4"],
  ]
    .map((r) => `<div class="row"><span>${r[0]}</span><span>${r[1]}</span><b>${r[2]}</b></div>`)
    .join("")}</div><p>one</p><p>two</p><p>three</p>`;

  test("cards that repeat the same labels are a label grid with the labels as headers", () => {
    expect(run({ mode: "html", html: cards }).tables).toEqual([]);
    const t = run({ mode: "html", include_html_grids: true }, { html: cards }).tables[0]!;
    expect(t.source).toBe("html_label_grid");
    expect(t.matrix).toEqual([
      ["Order", "Total"],
      ["A-1", "$5"],
      ["A-2", "$7"],
      ["A-3", "$9"],
    ]);
    expect(t.lookup.by_column.total).toEqual({ a_1: "$5", a_2: "$7", a_3: "$9" });
    expect(t.detection.selector_hint).toBe("div.card");
  });

  test("repeated row-like blocks are a repeated grid; single-leaf paragraphs are not", () => {
    const { tables } = run({ mode: "html", include_html_grids: true }, { html: rows });
    expect(tables.map((t) => t.source)).toEqual(["html_repeated_grid"]);
    expect(tables[0]!.matrix[2]).toEqual(["Doohickey", "1", "$4"]);
    expect(
      run({ mode: "html", include_html_grids: true, html_grid_mode: "off" }, { html: rows }).tables,
    ).toEqual([]);
  });

  test("strict mode wants three blocks; lenient accepts two", () => {
    const two = `<div><div class="r"><i>a</i><i>1</i></div><div class="r"><i>b</i><i>2</i></div></div>`;
    expect(run({ mode: "html", include_html_grids: true }, { html: two }).tables).toEqual([]);
    expect(
      run({ mode: "html", include_html_grids: true, html_grid_mode: "lenient" }, { html: two }).tables[0]!
        .matrix,
    ).toEqual([
      ["a", "1"],
      ["b", "2"],
    ]);
  });
});

test("header keys: entities, zero-width characters, case and punctuation", () => {
  expect(normalizeHeader(" Unit&nbsp;Price (USD) ")).toBe("unit_price_usd");
  expect(normalizeHeader("Total\u200b Due")).toBe("total_due");
  expect(normalizeHeader("ÄRGER & Co.")).toBe("ärger_co");
});

test("the documented usage example", () => {
  const out = compileMapper({
    version: "v1",
    vars: [{ name: "tables", expr: { "call.extract.tables": { mode: "auto" } } }],
    output: {
      widget_qty: { var: "vars.tables.tables[0].lookup.by_row.widget.qty" },
      gadget_total: { var: "vars.tables.tables[0].lookup.by_column.total.gadget" },
      row_totals: {
        map: {
          over: { var: "vars.tables.tables[0].rows" },
          as: "row",
          do: { item: { var: "row.lookup_key" }, total: { var: "row.values.total" } },
        },
      },
    },
  })({ message: { text: tsv }, ctx: {} } as never);
  expect(out).toEqual({
    widget_qty: "2",
    gadget_total: "$15.00",
    row_totals: [
      { item: "widget", total: "$10.00" },
      { item: "gadget", total: "$15.00" },
    ],
  });
});
