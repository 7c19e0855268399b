import { describe, expect, test } from "bun:test";
import { compileMapper, MapperRuntimeError, validateMapperConfig } from "../index.ts";
import { extractDom, MAX_DOM_INPUT_CHARS } from "./extract-dom.ts";

const html = `<html><head><title>T</title><style>.total{}</style></head><body>
<h1>Matches Based on Your Profile</h1>
<table><tbody>
<tr><td style="padding:20px 0;"><table><tr><td width="90"><img alt="Attentus Technologies"></td>
  <td><p>Outlet</p><p><a href="/t/1">CFOs &amp; IT leaders</a></p><p>Submit By: 4 May</p>
  <a href="https://p.example/1">Learn More &amp; Pitch</a></td></tr></table></td></tr>
<tr><td style="padding:20px 0;"><table><tr><td width="90"><img alt="Other Co"></td>
  <td><p>Outlet</p><p><a href="/t/2">Second story</a></p><p>Submit By: 5 May</p></td></tr></table></td></tr>
</tbody></table>
<span class="total">  $42.00
 </span>
<a class="t" href="https://x.example/track/1">Track   it</a><a class="t" href="https://x.example/track/2">again</a>
<div style="display:none"><span class="total">hidden</span></div><script>var total = 1</script>
</body></html>`;
const dom = (args: Record<string, unknown>) => extractDom(args, { message: { html } }) as Record<string, any>;

describe("call.extract.dom: scalar values", () => {
  test("text of the first match, normalized, with item metadata (hidden content removed first)", () => {
    expect(dom({ selector_type: "css", selector: "span.total", value: "text" })).toEqual({
      value: "$42.00",
      values: ["$42.00"],
      item: { index: 0, tag: "span", value: "$42.00", text: "$42.00", attrs: { class: "total" } },
      items: [{ index: 0, tag: "span", value: "$42.00", text: "$42.00", attrs: { class: "total" } }],
      summary: { match_count: 1, value_count: 1, truncated: false },
    });
    expect(
      dom({ selector_type: "css", selector: "span.total", value: "text", normalize_whitespace: false }).value,
    ).toBe("  $42.00\n ");
  });

  test("attr, many, max_matches, default", () => {
    expect(
      dom({ selector_type: "css", selector: "a[href*='track']", value: "attr", attr: "href" }).value,
    ).toBe("https://x.example/track/1");
    const many = dom({ selector_type: "css", selector: "a.t", value: "attr", attr: "href", many: true });
    expect(many.values).toEqual(["https://x.example/track/1", "https://x.example/track/2"]);
    const capped = dom({ selector_type: "css", selector: "a.t", value: "text", many: true, max_matches: 1 });
    expect(capped.values).toEqual(["Track it"]);
    expect(capped.summary).toEqual({ match_count: 1, value_count: 1, truncated: true });
    expect(
      dom({ selector_type: "css", selector: "a.t", value: "attr", attr: "title", default: "none" }).value,
    ).toBe("none");
    expect(dom({ selector_type: "css", selector: "nope", value: "text" }).value).toBeNull();
  });

  test("html and outer_html projections; exists and count aggregates", () => {
    expect(dom({ selector_type: "css", selector: "a.t", value: "html" }).value).toBe("Track   it");
    expect(dom({ selector_type: "css", selector: "a.t", value: "outer_html" }).value).toBe(
      '<a class="t" href="https://x.example/track/1">Track   it</a>',
    );
    expect(dom({ selector_type: "css", selector: "a.t", value: "count" })).toEqual({
      value: 2,
      values: [],
      item: null,
      items: [],
      summary: { match_count: 2, value_count: 0, truncated: false },
    });
    expect(dom({ selector_type: "css", selector: "script", value: "exists" }).value).toBe(false);
  });

  test("XPath selects the same elements; a scalar XPath expression is refused", () => {
    expect(dom({ selector_type: "xpath", selector: "//span[@class='total']", value: "text" }).value).toBe(
      "$42.00",
    );
    expect(() => dom({ selector_type: "xpath", selector: "count(//tr)", value: "text" })).toThrow(
      /element nodes/,
    );
  });

  test("required fails the mapper only when nothing matches", () => {
    const config = {
      version: "v1",
      output: {
        "call.extract.dom": { selector_type: "css", selector: "#missing", value: "text", required: true },
      },
    };
    const run = compileMapper(config);
    expect(() => run({ message: { html }, ctx: {} } as never)).toThrow(MapperRuntimeError);
    try {
      run({ message: { html }, ctx: {} } as never);
    } catch (err) {
      expect((err as MapperRuntimeError).code).toBe("mapper.required_missing");
    }
    expect(
      dom({ selector_type: "css", selector: "img", value: "attr", attr: "title", required: true }).value,
    ).toBeNull();
  });

  test("input over 200,000 characters is cut and reported as truncated", () => {
    const big = `<p class="x">a</p>${"<i>pad</i>".repeat(MAX_DOM_INPUT_CHARS / 10)}<p class="x">late</p>`;
    const r = extractDom({ html: big, selector_type: "css", selector: "p.x", value: "text", many: true }, {});
    expect((r as Record<string, any>).values).toEqual(["a"]);
    expect((r as Record<string, any>).summary.truncated).toBe(true);
  });

  test("selector_type, selector and value are required arguments", () => {
    const r = validateMapperConfig({ version: "v1", output: { "call.extract.dom": { selector: "a" } } });
    expect(r.ok ? [] : r.errors.map((e) => e.message)).toEqual([
      'extract.dom is missing the required argument "selector_type"',
      'extract.dom is missing the required argument "value"',
    ]);
  });
});

describe("call.extract.dom: records", () => {
  const fields = {
    outlet: { selector: ".//td[@width='90']//img[1]", value: "attr", attr: "alt" },
    title: {
      selector: ".//td[@width='90']/following-sibling::td[1]/p[2]/a[1]",
      value: "text",
      required: true,
    },
    submit_by: { selector: ".//p[contains(normalize-space(.), 'Submit By:')]", value: "text" },
    pitch_url: {
      selector: ".//a[contains(normalize-space(.), 'Learn More') and contains(normalize-space(.), 'Pitch')]",
      value: "attr",
      attr: "href",
    },
  };
  const selector =
    "//h1[contains(normalize-space(.), 'Matches Based')]/following::table[1]//tr[td[contains(@style, 'padding:20px 0;')]/table//p[contains(normalize-space(.), 'Submit By:')]]";

  test("the documented XPath record example", () => {
    const r = dom({ selector_type: "xpath", selector, value: "text", fields });
    expect(r.summary).toEqual({ item_count: 2, truncated: false });
    expect(r.items.map((i: { values: unknown }) => i.values)).toEqual([
      {
        outlet: "Attentus Technologies",
        title: "CFOs & IT leaders",
        submit_by: "Submit By: 4 May",
        pitch_url: "https://p.example/1",
      },
      { outlet: "Other Co", title: "Second story", submit_by: "Submit By: 5 May", pitch_url: null },
    ]);
    expect(r.item.fields.title).toEqual({
      value: "CFOs & IT leaders",
      values: ["CFOs & IT leaders"],
      match_count: 1,
      value_count: 1,
      truncated: false,
    });
  });

  test("CSS records, include_container, absolute XPath fields and mixed engines are refused", () => {
    const r = dom({
      selector_type: "css",
      selector: "a.t",
      value: "text",
      fields: { label: { selector: ":scope", value: "text" } },
      include_container: { tag: true, attrs: ["class", "onclick"] },
    });
    expect(r.items[0].container).toEqual({ tag: "a", attrs: { class: "t" } });
    expect(() =>
      dom({
        selector_type: "xpath",
        selector: "//tr",
        value: "text",
        fields: { x: { selector: "//a", value: "text" } },
      }),
    ).toThrow(/relative/);
    expect(() =>
      dom({
        selector_type: "xpath",
        selector: "//tr",
        value: "text",
        fields: { x: { selector: "a", selector_type: "css", value: "text" } },
      }),
    ).toThrow(/mixed/);
  });
});

describe("call.extract.dom: validation of literal arguments", () => {
  const check = (args: Record<string, unknown>) => {
    const r = validateMapperConfig({ version: "v1", output: { "call.extract.dom": args } });
    return r.ok ? [] : r.errors.map((e) => [e.path.replace("/output/call.extract.dom", ""), e.message]);
  };

  test("selectors that do not compile, missing attr, bad value, absolute and misspelled field keys", () => {
    expect(check({ selector_type: "css", selector: "a[href", value: "text" })[0]?.[0]).toBe("/selector");
    expect(check({ selector_type: "xpath", selector: "//tr[", value: "text" })[0]?.[1]).toContain(
      "invalid XPath",
    );
    expect(check({ selector_type: "css", selector: "a", value: "attr" })).toEqual([
      ["/attr", 'extract.dom: attr is required when value is "attr"'],
    ]);
    expect(
      check({
        selector_type: "xpath",
        selector: "//tr",
        value: "text",
        fields: {
          a: { selector: "//a", value: "text" },
          b: { selector: ".//a", value: "nope", selctor: "x" },
        },
      }).map(([path]) => path),
    ).toEqual(["/fields/a/selector", "/fields/b/selctor", "/fields/b/value"]);
  });

  test("computed arguments are checked when they run, not at validation", () => {
    expect(check({ selector_type: "css", selector: { var: "message.subject" }, value: "text" })).toEqual([]);
  });
});
