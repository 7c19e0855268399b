/**
 * Every complete `map.custom_json` config in MailWebhook's public documentation (the DSL reference, the
 * Custom JSON page, the Custom JSON recipes and the CRM lead recipe), written out as fixtures, with a
 * message and the body the documentation shows where it shows one. `expected` is what our mapper must
 * produce; `expectedSubset` is matched as a subset where the documentation abridges its output.
 * Used by mapper/mailwebhook-docs.test.ts.
 */

export interface DocsFixture {
  /** where the config appears, as "page › section" */
  name: string;
  config: Record<string, unknown>;
  /** the message the documented output is computed from (omitted: validation only) */
  message?: Record<string, unknown>;
  ctx?: Record<string, unknown>;
  expected?: unknown;
  expectedSubset?: unknown;
  /** `call.*` helpers the config needs; absent ones are reported instead of failing the fixture */
  helpers?: string[];
}

const v = (path: string) => ({ var: path });
const htmlToText = { "call.transform.html_to_text": { html: v("message.html"), text: v("message.text") } };

const tableHtml =
  "<table><tr><th>Item</th><th>Qty</th><th>Total</th></tr><tr><td>Widget</td><td>2</td><td>$10.00</td></tr><tr><td>Gadget</td><td>3</td><td>$15.00</td></tr></table>";

const cardsHtml = (cards: { outlet: string; title: string; by: string; text: string; pitch?: string }[]) =>
  `<html><body><h1>Matches Based on Your Profile</h1><table>${cards
    .map(
      (c) =>
        `<tr><td style="padding:20px 0;"><table><tr><td width="90"><img src="logo.png" alt="${c.outlet}"></td><td><p>Outlet</p><p><a href="https://example.com/q">${c.title}</a></p><p>Submit By: ${c.by}</p>${c.pitch ? `<a href="${c.pitch}">Learn More &amp; Pitch</a>` : ""}</td></tr><tr><td colspan="2"><p>${c.text}</p><p><img src="x.png"></p></td></tr></table></td></tr>`,
    )
    .join("")}</table></body></html>`;

const xpathCards =
  "//h1[contains(normalize-space(.), 'Matches Based')]/following::table[1]//tr[td[contains(@style, 'padding:20px 0;')]/table//p[contains(normalize-space(.), 'Submit By:')]]";
const cardFields = {
  outlet: { selector: ".//td[@width='90']//img[1]", value: "attr", attr: "alt" },
  title: { selector: ".//td[@width='90']/following-sibling::td[1]/p[2]/a[1]", value: "text" },
  submit_by: { selector: ".//p[contains(normalize-space(.), 'Submit By:')]", value: "text" },
  pitch_url: {
    selector: ".//a[contains(normalize-space(.), 'Learn More') and contains(normalize-space(.), 'Pitch')]",
    value: "attr",
    attr: "href",
  },
};
const twoCards = cardsHtml([
  {
    outlet: "Attentus Technologies",
    title: "CFOs &amp; IT leaders on in-house vs managed IT",
    by: "4 May 7:17PM CEST (in 3 days)",
    text: "Looking for insights from CFOs, CIOs, and IT decision-makers...",
    pitch: "https://example.com/pitch",
  },
  { outlet: "Other Outlet", title: "Second request", by: "5 May", text: "Another request" },
]);

const kvLead = [
  "Full Name: Ada Lovelace",
  "Email: ada@example.com",
  "Company: Example Co",
  "Phone: +1 555 0100",
  "Lead Source: Website demo form",
  "Message: I would like a product demo",
].join("\n");

export const DOCS_FIXTURES: DocsFixture[] = [
  // ---------- DSL reference ----------
  {
    name: "dsl › string and regex examples",
    config: {
      version: "v1",
      vars: [
        { name: "sender", expr: { "string.lower": v("message.from[0].email") } },
        {
          name: "sender_domain",
          expr: { "regex.replace": { value: v("vars.sender"), pattern: "^.*@([^>\\s]+)$", with: "\\1" } },
        },
        { name: "subject_parts", expr: { "string.split": { value: v("message.subject"), sep: ":" } } },
      ],
      output: {
        sender_domain: v("vars.sender_domain"),
        subject_prefix: { "string.trim": v("vars.subject_parts[0]") },
        subject_detail: { "string.trim": v("vars.subject_parts[1]") },
        compact_subject: { "regex.replace": { value: v("message.subject"), pattern: "\\s+", with: " " } },
        tag_list: { "string.join": { items: ["mail", v("vars.sender_domain")], sep: ", " } },
        safe_subject: { "string.replace": { value: v("message.subject"), find: '"', with: "'" } },
      },
    },
    message: { subject: 'Order:  "A1"', from: [{ email: "Billing@Vendor.Example" }] },
    expected: {
      sender_domain: "vendor.example",
      subject_prefix: "Order",
      subject_detail: '"A1"',
      compact_subject: 'Order: "A1"',
      tag_list: "mail, vendor.example",
      safe_subject: "Order:  'A1'",
    },
  },
  {
    name: "dsl › classification, cat and merge template",
    config: {
      version: "v1",
      output: {
        priority: {
          if: [
            {
              or: [
                { "regex.match": { value: v("message.subject"), pattern: "(?i)urgent|failure|down" } },
                { in: [v("message.from[0].email"), ["ceo@example.com", "ops@example.com"]] },
              ],
            },
            "high",
            "normal",
          ],
        },
        summary: { cat: [v("message.subject"), " from ", v("message.from[0].email")] },
        payload: {
          merge: [
            { source: "mailwebhook", priority: "normal" },
            { priority: "high" },
            { subject: v("message.subject") },
          ],
        },
      },
    },
    message: { subject: "Disk DOWN", from: [{ email: "a@example.com" }] },
    expected: {
      priority: "high",
      summary: "Disk DOWN from a@example.com",
      payload: { source: "mailwebhook", priority: "high", subject: "Disk DOWN" },
    },
  },
  {
    name: "dsl › array helper workflow",
    config: {
      version: "v1",
      output: {
        pdf_attachments: {
          filter: {
            over: v("message.attachments"),
            as: "attachment",
            where: { "==": [v("attachment.content_type"), "application/pdf"] },
          },
        },
        first_invoice_pdf: {
          find: {
            over: v("message.attachments"),
            as: "attachment",
            where: { "regex.match": { value: v("attachment.filename"), pattern: "(?i)invoice.*\\.pdf$" } },
          },
        },
        has_large_attachment: {
          some: {
            over: v("message.attachments"),
            as: "attachment",
            where: { ">": [v("attachment.size"), 10485760] },
          },
        },
        all_attachments_hashed: {
          all: { over: v("message.attachments"), as: "attachment", where: v("attachment.sha256") },
        },
        no_executables: {
          none: {
            over: v("message.attachments"),
            as: "attachment",
            where: { "regex.match": { value: v("attachment.filename"), pattern: "(?i)\\.(exe|scr)$" } },
          },
        },
        reduced: {
          reduce: {
            over: [{ amount: 10 }, { amount: 15 }],
            start: 0,
            do: { cat: [v("accumulator"), v("current.amount")] },
          },
        },
      },
    },
    message: {
      attachments: [
        { filename: "Invoice-7.PDF", content_type: "application/pdf", size: 10, sha256: "aa" },
        { filename: "notes.txt", content_type: "text/plain", size: 20, sha256: "bb" },
      ],
    },
    expected: {
      pdf_attachments: [
        { filename: "Invoice-7.PDF", content_type: "application/pdf", size: 10, sha256: "aa" },
      ],
      first_invoice_pdf: {
        filename: "Invoice-7.PDF",
        content_type: "application/pdf",
        size: 10,
        sha256: "aa",
      },
      has_large_attachment: false,
      all_attachments_hashed: true,
      no_executables: true,
      reduced: "01015",
    },
  },
  {
    name: "dsl › substr object form",
    config: { version: "v1", output: { substr: { value: v("message.subject"), start: 0, end: 80 } } },
    message: { subject: "Short subject" },
    expected: "Short subject",
  },
  {
    name: "dsl › scoped block",
    config: {
      version: "v1",
      vars: [{ name: "bullet", expr: { text: v("message.subject") } }],
      output: {
        map: {
          over: [v("vars.bullet")],
          as: "bullet",
          do: {
            vars: [
              { name: "text", expr: v("bullet.text") },
              { name: "parts", expr: { "string.split": { value: v("vars.text"), sep: ":" } } },
            ],
            output: { "string.trim": v("vars.parts[1]") },
          },
        },
      },
    },
    message: { subject: "Status: shipped " },
    expected: ["shipped"],
  },
  {
    name: "dsl › a literal {vars, output} object built with merge",
    config: { version: "v1", output: { merge: [{ vars: [1, 2, 3] }, { output: "value" }] } },
    message: {},
    expected: { vars: [1, 2, 3], output: "value" },
  },
  {
    name: "dsl › html_to_text common pattern",
    config: {
      version: "v1",
      vars: [{ name: "text", expr: htmlToText }],
      output: { subject: v("message.subject"), snippet: { substr: [v("vars.text"), 0, 240] } },
    },
    message: { subject: "Hi", text: "Hello there" },
    expected: { subject: "Hi", snippet: "Hello there" },
  },
  {
    name: "dsl › extract.urls usage",
    config: {
      version: "v1",
      vars: [
        {
          name: "links",
          expr: {
            "call.extract.urls": { html: v("message.html"), text: v("message.text"), deduplicate: true },
          },
        },
      ],
      output: {
        first_url: v("vars.links[0].url"),
        first_label: v("vars.links[0].title"),
        all_urls: { map: { over: v("vars.links"), as: "link", do: v("link.url") } },
      },
    },
    message: { html: '<a href="https://example.com/a">A</a><a href="https://example.com/a">A</a>' },
    expected: { first_url: "https://example.com/a", first_label: "A", all_urls: ["https://example.com/a"] },
  },
  {
    name: "dsl › extract.bullet_list usage",
    config: {
      version: "v1",
      vars: [
        {
          name: "lists",
          expr: {
            "call.extract.bullet_list": {
              html: v("message.html"),
              text: v("message.text"),
              nested: true,
              numbered: true,
            },
          },
        },
      ],
      output: {
        first_item: v("vars.lists[0].bullets[0].text"),
        first_item_children: v("vars.lists[0].bullets[0].child.bullets"),
        flat_items: { map: { over: v("vars.lists[0].bullets"), as: "bullet", do: v("bullet.text") } },
      },
    },
    message: { html: "<ul><li>One<ul><li>One.a</li></ul></li><li>Two</li></ul>" },
    expectedSubset: { first_item: "One", flat_items: ["One", "Two"] },
  },
  {
    name: "dsl › extract.reply_segments usage",
    helpers: ["extract.reply_segments"],
    config: {
      version: "v1",
      vars: [
        {
          name: "reply_segments",
          expr: {
            "call.extract.reply_segments": {
              sources: ["text"],
              split_quoted_by_depth: true,
              include_signature: true,
            },
          },
        },
      ],
      output: {
        reply_text: v("vars.reply_segments.text.reply_content"),
        has_quoted_content: v("vars.reply_segments.text.has_quoted_content"),
        quoted_segments: {
          filter: {
            over: v("vars.reply_segments.text.segments"),
            as: "segment",
            where: { "==": [v("segment.kind"), "quoted_content"] },
          },
        },
        signature: {
          find: {
            over: v("vars.reply_segments.text.segments"),
            as: "segment",
            where: { "==": [v("segment.kind"), "signature"] },
          },
        },
      },
    },
  },
  {
    name: "dsl › extract.key_value_pairs usage",
    config: {
      version: "v1",
      vars: [{ name: "kv", expr: { "call.extract.key_value_pairs": { mode: "text" } } }],
      output: {
        first_order_id: v("vars.kv.values.order_id"),
        all_order_ids: v("vars.kv.groups.order_id"),
        customer_email: v("vars.kv.values.customer_email"),
        ticket_type: v("vars.kv.values.ticket_type"),
      },
    },
    message: {
      text: "Order ID: AZ-123\nOrder ID: AZ-124\nCustomer Email: ada@example.com\nTicket-Type: billing",
    },
    expected: {
      first_order_id: "AZ-123",
      all_order_ids: ["AZ-123", "AZ-124"],
      customer_email: "ada@example.com",
      ticket_type: "billing",
    },
  },
  {
    name: "dsl › extract.tables usage",
    config: {
      version: "v1",
      vars: [{ name: "tables", expr: { "call.extract.tables": { mode: "auto" } } }],
      output: {
        widget_qty: v("vars.tables.tables[0].lookup.by_row.widget.qty"),
        gadget_total: v("vars.tables.tables[0].lookup.by_column.total.gadget"),
        row_totals: {
          map: {
            over: v("vars.tables.tables[0].rows"),
            as: "row",
            do: { item: v("row.lookup_key"), total: v("row.values.total") },
          },
        },
        matrix: v("vars.tables.tables[0].matrix"),
      },
    },
    message: { text: "Item\tQty\tTotal\nWidget\t2\t$10.00\nGadget\t3\t$15.00" },
    expected: {
      widget_qty: "2",
      gadget_total: "$15.00",
      row_totals: [
        { item: "widget", total: "$10.00" },
        { item: "gadget", total: "$15.00" },
      ],
      matrix: [
        ["Item", "Qty", "Total"],
        ["Widget", "2", "$10.00"],
        ["Gadget", "3", "$15.00"],
      ],
    },
  },
  {
    name: "dsl › extract.dom CSS scalar",
    config: {
      version: "v1",
      vars: [
        {
          name: "tracking_link",
          expr: {
            "call.extract.dom": {
              selector_type: "css",
              selector: "a[href*='track']",
              value: "attr",
              attr: "href",
            },
          },
        },
      ],
      output: { tracking_url: v("vars.tracking_link.value") },
    },
    message: { html: '<p><a href="https://carrier.example/track?id=9">Track</a></p>' },
    expected: { tracking_url: "https://carrier.example/track?id=9" },
  },
  {
    name: "dsl › extract.dom structured XPath",
    config: {
      version: "v1",
      vars: [
        {
          name: "opportunities",
          expr: {
            "call.extract.dom": {
              selector_type: "xpath",
              selector: xpathCards,
              value: "text",
              fields: { ...cardFields, title: { ...cardFields.title, required: true } },
            },
          },
        },
      ],
      output: {
        count: v("vars.opportunities.summary.item_count"),
        first_title: v("vars.opportunities.items[0].values.title"),
        opportunities: {
          map: {
            over: v("vars.opportunities.items"),
            as: "opportunity",
            do: {
              outlet: v("opportunity.values.outlet"),
              title: v("opportunity.values.title"),
              submit_by: v("opportunity.values.submit_by"),
              pitch_url: v("opportunity.values.pitch_url"),
            },
          },
        },
      },
    },
    message: { html: twoCards },
    expectedSubset: {
      count: 2,
      first_title: "CFOs & IT leaders on in-house vs managed IT",
      opportunities: [
        {
          outlet: "Attentus Technologies",
          title: "CFOs & IT leaders on in-house vs managed IT",
          submit_by: "Submit By: 4 May 7:17PM CEST (in 3 days)",
          pitch_url: "https://example.com/pitch",
        },
      ],
    },
  },

  // ---------- Custom JSON page ----------
  {
    name: "custom_json › how to use it",
    config: {
      version: "v1",
      vars: [{ name: "plain_text", expr: htmlToText }],
      output: {
        id: v("message.message_id"),
        subject: v("message.subject"),
        from: v("message.from[0].email"),
        text: v("vars.plain_text"),
      },
    },
    message: { message_id: "<a@b>", subject: "S", from: [{ email: "x@y.example" }], text: "T" },
    expected: { id: "<a@b>", subject: "S", from: "x@y.example", text: "T" },
  },
  {
    name: "custom_json › mapper document",
    config: {
      version: "v1",
      vars: [{ name: "text", expr: v("message.text") }],
      output: { subject: v("message.subject"), text: v("vars.text") },
      meta: { source: "accounts-payable" },
    },
    message: { subject: "S", text: "T" },
    expected: { subject: "S", text: "T" },
  },
  {
    name: "custom_json › vendor priority payload",
    config: {
      version: "v1",
      vars: [
        { name: "text", expr: htmlToText },
        {
          name: "is_vendor",
          expr: { "regex.match": { value: v("message.from[0].email"), pattern: "@vendor\\.com$" } },
        },
      ],
      output: {
        id: v("message.message_id"),
        source: v("ctx.source_type"),
        priority: { if: [v("vars.is_vendor"), "high", "normal"] },
        snippet: { substr: [v("vars.text"), 0, 200] },
      },
    },
    message: { message_id: "<m@v>", from: [{ email: "ap@vendor.com" }], text: "Invoice attached" },
    ctx: { source_type: "smtp" },
    expected: { id: "<m@v>", source: "smtp", priority: "high", snippet: "Invoice attached" },
  },
  {
    name: "custom_json › URL extraction",
    config: {
      version: "v1",
      vars: [
        {
          name: "urls",
          expr: {
            "call.extract.urls": { html: v("message.html"), text: v("message.text"), deduplicate: true },
          },
        },
      ],
      output: {
        subject: v("message.subject"),
        first_url: v("vars.urls[0].url"),
        first_url_title: v("vars.urls[0].title"),
      },
    },
    message: { subject: "S", text: "See [the docs](https://example.com/docs)" },
    expected: { subject: "S", first_url: "https://example.com/docs", first_url_title: "the docs" },
  },
  {
    name: "custom_json › reply body only",
    helpers: ["extract.reply_segments"],
    config: {
      version: "v1",
      vars: [
        {
          name: "reply_segments",
          expr: { "call.extract.reply_segments": { sources: ["text"], split_quoted_by_depth: true } },
        },
      ],
      output: {
        subject: v("message.subject"),
        reply_text: v("vars.reply_segments.text.reply_content"),
        has_quoted_content: v("vars.reply_segments.text.has_quoted_content"),
      },
    },
  },
  {
    name: "custom_json › key/value extraction",
    config: {
      version: "v1",
      vars: [{ name: "kv", expr: { "call.extract.key_value_pairs": { mode: "auto" } } }],
      output: {
        subject: v("message.subject"),
        order_id: v("vars.kv.values.order_id"),
        all_order_ids: v("vars.kv.groups.order_id"),
        fields: {
          map: {
            over: v("vars.kv.items"),
            as: "pair",
            do: { key: v("pair.normalized_key"), value: v("pair.value"), source: v("pair.source") },
          },
        },
      },
    },
    message: { subject: "Order", html: "<table><tr><td>Order ID</td><td>AZ-7</td></tr></table>" },
    expected: {
      subject: "Order",
      order_id: "AZ-7",
      all_order_ids: ["AZ-7"],
      fields: [{ key: "order_id", value: "AZ-7", source: "html_table" }],
    },
  },
  {
    name: "custom_json › table extraction",
    config: {
      version: "v1",
      vars: [{ name: "tables", expr: { "call.extract.tables": { mode: "auto" } } }],
      output: {
        subject: v("message.subject"),
        table_count: v("vars.tables.summary.table_count"),
        widget_qty: v("vars.tables.tables[0].lookup.by_row.widget.qty"),
        row_totals: {
          map: {
            over: v("vars.tables.tables[0].rows"),
            as: "row",
            do: { item: v("row.lookup_key"), total: v("row.values.total") },
          },
        },
      },
    },
    message: { subject: "Order summary", html: tableHtml },
    expected: {
      subject: "Order summary",
      table_count: 1,
      widget_qty: "2",
      row_totals: [
        { item: "widget", total: "$10.00" },
        { item: "gadget", total: "$15.00" },
      ],
    },
  },
  {
    name: "custom_json › DOM extraction",
    config: {
      version: "v1",
      vars: [
        {
          name: "opportunities",
          expr: {
            "call.extract.dom": {
              selector_type: "xpath",
              selector: xpathCards,
              value: "text",
              fields: cardFields,
            },
          },
        },
      ],
      output: {
        opportunity_count: v("vars.opportunities.summary.item_count"),
        opportunities: {
          map: { over: v("vars.opportunities.items"), as: "opportunity", do: v("opportunity.values") },
        },
      },
    },
    message: { html: twoCards },
    expectedSubset: { opportunity_count: 2 },
  },

  // ---------- Custom JSON recipes ----------
  {
    name: "recipes › extract the new reply only",
    helpers: ["extract.reply_segments"],
    config: {
      version: "v1",
      vars: [
        {
          name: "reply_segments",
          expr: { "call.extract.reply_segments": { sources: ["text"], split_quoted_by_depth: true } },
        },
      ],
      output: {
        message_id: v("message.message_id"),
        subject: v("message.subject"),
        from: v("message.from[0].email"),
        reply_text: v("vars.reply_segments.text.reply_content"),
        has_quoted_content: v("vars.reply_segments.text.has_quoted_content"),
        quoted_depth: v("vars.reply_segments.text.max_depth"),
      },
    },
  },
  {
    name: "recipes › extract all links",
    config: {
      version: "v1",
      vars: [
        {
          name: "links",
          expr: {
            "call.extract.urls": { html: v("message.html"), text: v("message.text"), deduplicate: true },
          },
        },
      ],
      output: {
        subject: v("message.subject"),
        links: {
          map: {
            over: v("vars.links"),
            as: "link",
            do: { url: v("link.url"), label: v("link.title"), source_element: v("link.element") },
          },
        },
      },
    },
    message: {
      subject: "Your report is ready",
      html: '<p><a href="https://example.com/report">View report</a></p>',
    },
    expected: {
      subject: "Your report is ready",
      links: [{ url: "https://example.com/report", label: "View report", source_element: "a" }],
    },
  },
  {
    name: "recipes › extract key/value fields",
    config: {
      version: "v1",
      vars: [{ name: "kv", expr: { "call.extract.key_value_pairs": { mode: "auto" } } }],
      output: {
        subject: v("message.subject"),
        order_id: v("vars.kv.values.order_id"),
        all_order_ids: v("vars.kv.groups.order_id"),
        customer_email: v("vars.kv.values.customer_email"),
        fields: {
          map: {
            over: v("vars.kv.items"),
            as: "pair",
            do: {
              key: v("pair.normalized_key"),
              value: v("pair.value"),
              source: v("pair.source"),
              line: v("pair.line"),
            },
          },
        },
      },
    },
    message: { subject: "Order received", text: "Order ID: AZ-123\nCustomer Email: ada@example.com" },
    expected: {
      subject: "Order received",
      order_id: "AZ-123",
      all_order_ids: ["AZ-123"],
      customer_email: "ada@example.com",
      fields: [
        { key: "order_id", value: "AZ-123", source: "text", line: 1 },
        { key: "customer_email", value: "ada@example.com", source: "text", line: 2 },
      ],
    },
  },
  {
    name: "recipes › extract table cells by row and column",
    config: {
      version: "v1",
      vars: [{ name: "tables", expr: { "call.extract.tables": { mode: "auto" } } }],
      output: {
        subject: v("message.subject"),
        table_count: v("vars.tables.summary.table_count"),
        widget_qty: v("vars.tables.tables[0].lookup.by_row.widget.qty"),
        gadget_total: v("vars.tables.tables[0].lookup.by_column.total.gadget"),
        row_totals: {
          map: {
            over: v("vars.tables.tables[0].rows"),
            as: "row",
            do: { item: v("row.lookup_key"), total: v("row.values.total") },
          },
        },
        source: v("vars.tables.tables[0].source"),
      },
    },
    // The same table in the HTML and the text part: deduplication keeps the HTML one.
    message: {
      subject: "Order summary",
      html: tableHtml,
      text: "Item\tQty\tTotal\nWidget\t2\t$10.00\nGadget\t3\t$15.00",
    },
    expected: {
      subject: "Order summary",
      table_count: 1,
      widget_qty: "2",
      gadget_total: "$15.00",
      row_totals: [
        { item: "widget", total: "$10.00" },
        { item: "gadget", total: "$15.00" },
      ],
      source: "html_table",
    },
  },
  {
    name: "recipes › extract repeated DOM cards",
    config: {
      version: "v1",
      vars: [
        {
          name: "opportunities",
          expr: {
            "call.extract.dom": {
              selector_type: "xpath",
              selector: xpathCards,
              value: "text",
              max_matches: 16,
              fields: {
                outlet: cardFields.outlet,
                title: { ...cardFields.title, required: true },
                submit_by: cardFields.submit_by,
                description: { selector: ".//tr[2]/td/p[not(.//img)]", value: "text", many: true },
                pitch_url: cardFields.pitch_url,
              },
            },
          },
        },
      ],
      output: {
        subject: v("message.subject"),
        opportunity_count: v("vars.opportunities.summary.item_count"),
        opportunities: {
          map: {
            over: v("vars.opportunities.items"),
            as: "opportunity",
            do: {
              outlet: v("opportunity.values.outlet"),
              title: v("opportunity.values.title"),
              submit_by: v("opportunity.values.submit_by"),
              description: v("opportunity.fields.description.values"),
              pitch_url: v("opportunity.values.pitch_url"),
            },
          },
        },
      },
    },
    message: { subject: "New media requests", html: twoCards },
    expectedSubset: {
      subject: "New media requests",
      opportunity_count: 2,
      opportunities: [
        {
          outlet: "Attentus Technologies",
          title: "CFOs & IT leaders on in-house vs managed IT",
          submit_by: "Submit By: 4 May 7:17PM CEST (in 3 days)",
          description: ["Looking for insights from CFOs, CIOs, and IT decision-makers..."],
          pitch_url: "https://example.com/pitch",
        },
      ],
    },
  },
  {
    name: "recipes › turn a bullet list into tasks",
    config: {
      version: "v1",
      vars: [
        {
          name: "lists",
          expr: {
            "call.extract.bullet_list": { html: v("message.html"), text: v("message.text"), nested: true },
          },
        },
      ],
      output: {
        subject: v("message.subject"),
        tasks: {
          map: {
            over: v("vars.lists[0].bullets"),
            as: "bullet",
            do: {
              vars: [{ name: "parts", expr: { "string.split": { value: v("bullet.text"), sep: ":" } } }],
              output: {
                title: { "string.trim": v("vars.parts[0]") },
                detail: { "string.trim": v("vars.parts[1]") },
                children: v("bullet.child.bullets"),
              },
            },
          },
        },
      },
    },
    message: { subject: "Next steps", html: "<ul><li>Legal: Review the updated terms</li></ul>" },
    expected: {
      subject: "Next steps",
      tasks: [{ title: "Legal", detail: "Review the updated terms", children: null }],
    },
  },
  {
    name: "recipes › compact alert payload",
    config: {
      version: "v1",
      vars: [
        { name: "text", expr: htmlToText },
        {
          name: "urgent",
          expr: { "regex.match": { value: v("message.subject"), pattern: "(?i)urgent|failure|down|error" } },
        },
      ],
      output: {
        event_id: v("ctx.event_id"),
        route_id: v("ctx.route_id"),
        message_id: v("message.message_id"),
        from: v("message.from[0].email"),
        subject: v("message.subject"),
        priority: { if: [v("vars.urgent"), "high", "normal"] },
        snippet: { substr: [v("vars.text"), 0, 240] },
      },
    },
    message: {
      message_id: "abc123@example.com",
      from: [{ email: "monitor@example.com" }],
      subject: "Service failure",
      text: "The service failed its health check...",
    },
    ctx: {
      event_id: "6ff49aa1-7050-4ad1-95d9-2711f2ca7e88",
      route_id: "2f3713bf-88cc-46c6-aaa3-ea9d6e9d20f3",
    },
    expected: {
      event_id: "6ff49aa1-7050-4ad1-95d9-2711f2ca7e88",
      route_id: "2f3713bf-88cc-46c6-aaa3-ea9d6e9d20f3",
      message_id: "abc123@example.com",
      from: "monitor@example.com",
      subject: "Service failure",
      priority: "high",
      snippet: "The service failed its health check...",
    },
  },
  {
    name: "recipes › Slack-compatible webhook body",
    config: {
      version: "v1",
      vars: [{ name: "text", expr: htmlToText }],
      output: {
        text: {
          cat: [
            "*",
            v("message.subject"),
            "*\nFrom: ",
            v("message.from[0].email"),
            "\n",
            { substr: [v("vars.text"), 0, 700] },
          ],
        },
        blocks: [
          {
            type: "section",
            text: {
              type: "mrkdwn",
              text: { cat: ["*", v("message.subject"), "*\n", { substr: [v("vars.text"), 0, 700] }] },
            },
          },
          {
            type: "context",
            elements: [
              { type: "mrkdwn", text: { cat: ["From ", v("message.from[0].email"), " via MailWebhook"] } },
            ],
          },
        ],
      },
    },
    message: {
      subject: "Invoice received",
      from: [{ email: "vendor@example.com" }],
      text: "Please review invoice #123...",
    },
    expectedSubset: {
      text: "*Invoice received*\nFrom: vendor@example.com\nPlease review invoice #123...",
      blocks: [
        {
          type: "section",
          text: { type: "mrkdwn", text: "*Invoice received*\nPlease review invoice #123..." },
        },
      ],
    },
  },
  {
    name: "recipes › normalize invoice metadata",
    config: {
      version: "v1",
      vars: [
        { name: "sender", expr: { "string.lower": v("message.from[0].email") } },
        {
          name: "vendor_domain",
          expr: { "regex.replace": { value: v("vars.sender"), pattern: "^.*@([^>\\s]+)$", with: "\\1" } },
        },
        {
          name: "is_invoice",
          expr: { "regex.match": { value: v("message.subject"), pattern: "(?i)invoice|receipt|payment" } },
        },
      ],
      output: {
        kind: { if: [v("vars.is_invoice"), "invoice", "message"] },
        vendor: { email: v("vars.sender"), domain: v("vars.vendor_domain") },
        subject: v("message.subject"),
        first_attachment: {
          filename: v("message.attachments[0].filename"),
          content_type: v("message.attachments[0].content_type"),
          size: v("message.attachments[0].size"),
          sha256: v("message.attachments[0].sha256"),
        },
      },
    },
    message: {
      from: [{ email: "Billing@Vendor.example" }],
      subject: "Invoice 1234",
      attachments: [
        { filename: "invoice-1234.pdf", content_type: "application/pdf", size: 48192, sha256: "..." },
      ],
    },
    expected: {
      kind: "invoice",
      vendor: { email: "billing@vendor.example", domain: "vendor.example" },
      subject: "Invoice 1234",
      first_attachment: {
        filename: "invoice-1234.pdf",
        content_type: "application/pdf",
        size: 48192,
        sha256: "...",
      },
    },
  },

  // ---------- CRM lead recipe ----------
  {
    name: "recipes/crm-lead › CRM lead mapper",
    config: {
      version: "v1",
      vars: [
        {
          name: "kv",
          expr: {
            "call.extract.key_value_pairs": {
              mode: "auto",
              html: v("message.html"),
              text: v("message.text"),
            },
          },
        },
        { name: "body_text", expr: htmlToText },
      ],
      output: {
        type: "crm.lead.create",
        external_id: v("ctx.event_id"),
        source: "email",
        mailwebhook: {
          event_id: v("ctx.event_id"),
          route_id: v("ctx.route_id"),
          source_type: v("ctx.source_type"),
          message_id: v("message.message_id"),
        },
        lead: {
          name: v("vars.kv.values.full_name"),
          email: v("vars.kv.values.email"),
          company: v("vars.kv.values.company"),
          phone: v("vars.kv.values.phone"),
          lead_source: v("vars.kv.values.lead_source"),
          message: v("vars.kv.values.message"),
        },
        email: { from: v("message.from[0].email"), subject: v("message.subject"), body: v("vars.body_text") },
        raw_fields: v("vars.kv.items"),
        attachments: v("message.attachments"),
      },
    },
    message: {
      message_id: "<lead-4482@example.com>",
      from: [{ email: "forms@example.com" }],
      subject: "New lead from website",
      text: kvLead,
      attachments: [],
    },
    ctx: {
      event_id: "6ff49aa1-7050-4ad1-95d9-2711f2ca7e88",
      route_id: "2f3713bf-88cc-46c6-aaa3-ea9d6e9d20f3",
      source_type: "hosted",
    },
    expectedSubset: {
      type: "crm.lead.create",
      external_id: "6ff49aa1-7050-4ad1-95d9-2711f2ca7e88",
      source: "email",
      mailwebhook: {
        event_id: "6ff49aa1-7050-4ad1-95d9-2711f2ca7e88",
        route_id: "2f3713bf-88cc-46c6-aaa3-ea9d6e9d20f3",
        source_type: "hosted",
        message_id: "<lead-4482@example.com>",
      },
      lead: {
        name: "Ada Lovelace",
        email: "ada@example.com",
        company: "Example Co",
        phone: "+1 555 0100",
        lead_source: "Website demo form",
        message: "I would like a product demo",
      },
      email: { from: "forms@example.com", subject: "New lead from website", body: kvLead },
      raw_fields: [
        {
          key: "Full Name",
          normalized_key: "full_name",
          value: "Ada Lovelace",
          separator: ":",
          source: "text",
          line: 1,
        },
      ],
      attachments: [],
    },
  },
];
