// The Overview's charts: the hourly numbers the page carries as JSON (#overview-data), drawn with
// uPlot (served by the dashboard, /ui/assets/uplot.js). Without script the same numbers are the
// page's tables.

(() => {
  const source = document.getElementById("overview-data");
  if (!source || typeof window.uPlot !== "function") return;
  const data = JSON.parse(source.textContent || "{}");
  const css = getComputedStyle(document.documentElement);
  const colour = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  const bars = window.uPlot.paths.bars({ size: [0.7, 40] });

  const charts = {
    messages: [
      data.hours,
      [
        {
          label: "Messages",
          stroke: colour("--accent", "#2563eb"),
          fill: colour("--accent-soft", "#2563eb33"),
          paths: bars,
        },
      ],
      [data.messages],
    ],
    deliveries: [
      data.hours,
      [
        { label: "Delivered", stroke: colour("--ok", "#15803d"), fill: colour("--ok-soft", "#15803d33") },
        { label: "Failed", stroke: colour("--bad", "#b91c1c"), fill: colour("--bad-soft", "#b91c1c33") },
      ],
      [data.delivered, data.failed],
    ],
  };

  const drawn = [];
  for (const el of document.querySelectorAll("[data-chart]")) {
    const spec = charts[el.dataset.chart];
    if (!spec) continue;
    const [x, series, ys] = spec;
    const width = () => Math.max(240, el.clientWidth);
    const plot = new window.uPlot(
      {
        width: width(),
        height: 180,
        series: [{}, ...series],
        axes: [{}, { size: 40 }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        legend: { live: false },
      },
      [x, ...ys],
      el,
    );
    drawn.push([plot, el, width]);
  }
  // Charts follow the layout from phone to wide screens.
  let pending = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      for (const [plot, , width] of drawn) plot.setSize({ width: width(), height: 180 });
    });
  });
})();
