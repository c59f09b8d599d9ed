// Values on hover, zoom, chart export, and the live dashboard's refresh.
// No network but the page's own origin; no libraries. Every chart is an
// SVG drawn by pipebench that carries its scales (data-xmax, data-ytop,
// data-plot) and each line's values (data-x, data-y): the script reads
// them back rather than guessing from pixels.
"use strict";

// ---- reading a chart ----

// pbChart returns what a chart's SVG says about itself, read once.
function pbChart(svg) {
  if (svg.pbChart) return svg.pbChart;
  const [l, t, w, h] = svg.dataset.plot.split(" ").map(Number);
  const c = {
    svg, kind: svg.dataset.kind, unit: svg.dataset.unit,
    xmax: +svg.dataset.xmax, ytop: +svg.dataset.ytop, l, t, w, h,
    lines: [...svg.querySelectorAll("path.pb-line")].map((p) => ({
      el: p, name: p.dataset.name, color: p.getAttribute("stroke"),
      x: p.dataset.x.split(",").map(Number), y: p.dataset.y.split(",").map(Number),
    })),
  };
  svg.pbChart = c;
  return c;
}

// pbRange is the x range a chart shows: the zoom for charts over time.
function pbRange(c) {
  return c.kind === "time" && pbZoom ? pbZoom : [0, c.xmax];
}

// pbToSVG turns a pointer event's position into the chart's coordinates.
function pbToSVG(svg, e) {
  const p = svg.createSVGPoint();
  p.x = e.clientX;
  p.y = e.clientY;
  return p.matrixTransform(svg.getScreenCTM().inverse());
}

// ---- formatting ----

function pbNum(v) {
  if (!Number.isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a >= 100) return Math.round(v).toLocaleString("en-US");
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a === 0) return "0";
  return v.toPrecision(3);
}

// pbValue formats a chart's value with its unit; a duration in the unit
// that fits it (850 µs, 51.9 ms, 10.3 s), as the KPI table does.
function pbValue(v, unit) {
  const toSec = { s: 1, ms: 1e-3, "µs": 1e-6 }[unit];
  if (toSec === undefined || !Number.isFinite(v) || v === 0) return pbNum(v) + " " + unit;
  const s = v * toSec, [f, u] = s >= 1 ? [1, "s"] : s >= 1e-3 ? [1e3, "ms"] : [1e6, "µs"];
  return Number((s * f).toPrecision(3)).toString() + " " + u;
}

function pbElapsed(sec) {
  const s = Math.round(sec), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (h > 0) return m === 0 ? h + "h" : h + "h" + two(m) + "m";
  if (m > 0) return r === 0 ? m + "m" : m + "m" + two(r) + "s";
  return r + "s";
}

// pbTicks returns round elapsed times between x0 and x1 (as the Go side's
// timeTicks does from 0).
function pbTicks(x0, x1) {
  let step = 1;
  for (const s of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400]) {
    step = s;
    if ((x1 - x0) / s <= 8) break;
  }
  const out = [];
  for (let v = Math.ceil(x0 / step - 1e-9) * step; v <= x1 + 1e-9; v += step) out.push(v);
  return out;
}

// ---- values on hover ----

const pbTip = () => document.getElementById("pb-tip");

// pbNearest returns the index of the point of xs nearest to x.
function pbNearest(xs, x) {
  let lo = 0, hi = xs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs(xs[lo - 1] - x) <= Math.abs(xs[lo] - x)) lo--;
  return lo;
}

function pbShowTip(e, title, rows, note) {
  const tip = pbTip();
  tip.replaceChildren();
  const head = document.createElement("div");
  head.className = "pb-tip-head";
  head.textContent = title;
  tip.appendChild(head);
  for (const r of rows) {
    const row = document.createElement("div");
    const sw = document.createElement("span");
    sw.className = "pb-swatch";
    sw.style.background = r.color;
    row.appendChild(sw);
    row.appendChild(document.createTextNode(r.name + ": "));
    const b = document.createElement("b");
    b.textContent = r.value;
    row.appendChild(b);
    tip.appendChild(row);
  }
  if (note) {
    const n = document.createElement("div");
    n.className = "pb-tip-note";
    n.textContent = note;
    tip.appendChild(n);
  }
  tip.hidden = false;
  const pad = 14, w = tip.offsetWidth, h = tip.offsetHeight;
  let x = e.clientX + pad, y = e.clientY + pad;
  if (x + w > window.innerWidth) x = e.clientX - w - pad;
  if (y + h > window.innerHeight) y = e.clientY - h - pad;
  tip.style.left = x + "px";
  tip.style.top = y + "px";
}

function pbHideTip(svg) {
  pbTip().hidden = true;
  const cross = svg && svg.querySelector(".pb-cross");
  if (cross) cross.remove();
}

// pbHover shows the values of every line at the pointer's x.
function pbHover(svg, e) {
  const c = pbChart(svg);
  if (c.kind === "bars") {
    const bar = e.target.closest("rect.pb-bar");
    if (!bar) return pbHideTip(svg);
    return pbShowTip(e, bar.dataset.category, [{ name: bar.dataset.name, color: bar.getAttribute("fill"), value: pbValue(+bar.dataset.y, c.unit) }], bar.dataset.note);
  }
  const p = pbToSVG(svg, e);
  if (p.x < c.l || p.x > c.l + c.w || p.y < c.t || p.y > c.t + c.h) return pbHideTip(svg);
  const [x0, x1] = pbRange(c);
  const x = x0 + ((p.x - c.l) / c.w) * (x1 - x0);
  let title = "+" + pbElapsed(x);
  if (c.kind === "percentile") {
    const ticks = [...svg.querySelectorAll(".pb-xaxis text")];
    const xs = ticks.map((t) => x0 + ((+t.getAttribute("x") - c.l) / c.w) * (x1 - x0));
    title = ticks.length ? ticks[pbNearest(xs, x)].textContent : "";
  }
  const rows = [];
  for (const ln of c.lines) {
    if (!ln.x.length) continue;
    const i = pbNearest(ln.x, x);
    if (c.kind === "percentile" && Math.abs(ln.x[i] - x) > 0.5) continue;
    rows.push({ name: ln.name, color: ln.color, value: pbValue(ln.y[i], c.unit) });
  }
  let cross = svg.querySelector(".pb-cross");
  if (!cross) {
    cross = document.createElementNS("http://www.w3.org/2000/svg", "line");
    cross.setAttribute("class", "pb-cross");
    cross.setAttribute("stroke", "#1f2328");
    cross.setAttribute("stroke-width", "0.7");
    cross.setAttribute("y1", c.t);
    cross.setAttribute("y2", c.t + c.h);
    svg.appendChild(cross);
  }
  cross.setAttribute("x1", p.x);
  cross.setAttribute("x2", p.x);
  pbShowTip(e, title, rows);
}

// ---- zoom ----

// pbZoom is the time range [x0, x1] (seconds) every chart over time
// shows; null: the whole run.
let pbZoom = null;
let pbDrag = null;

// pbRedraw draws a chart over time for the current zoom: its lines, its
// x axis and its marks. The y axis stays that of the whole run.
function pbRedraw(svg) {
  const c = pbChart(svg);
  if (c.kind !== "time") return;
  const [x0, x1] = pbRange(c);
  const sx = (x) => c.l + ((x - x0) / (x1 - x0)) * c.w;
  const sy = (y) => c.t + c.h - (y / c.ytop) * c.h;
  for (const ln of c.lines) {
    let d = "", pen = false;
    for (let i = 0; i < ln.x.length; i++) {
      if (!Number.isFinite(ln.y[i])) { pen = false; continue; }
      d += (pen ? "L" : "M") + sx(ln.x[i]).toFixed(1) + " " + sy(ln.y[i]).toFixed(1);
      pen = true;
    }
    ln.el.setAttribute("d", d);
  }
  const axis = svg.querySelector(".pb-xaxis");
  const ns = "http://www.w3.org/2000/svg";
  axis.replaceChildren();
  for (const v of pbTicks(x0, x1)) {
    const x = sx(v);
    const tick = document.createElementNS(ns, "line");
    for (const [k, val] of [["x1", x], ["x2", x], ["y1", c.t + c.h], ["y2", c.t + c.h + 4], ["stroke", "#9ca3af"]]) tick.setAttribute(k, val);
    const label = document.createElementNS(ns, "text");
    for (const [k, val] of [["x", x], ["y", c.t + c.h + 16], ["text-anchor", "middle"], ["fill", "#59636e"]]) label.setAttribute(k, val);
    label.textContent = pbElapsed(v);
    axis.append(tick, label);
  }
  for (const m of svg.querySelectorAll(".pb-phase")) {
    const x = sx(+m.dataset.x);
    m.style.display = x < c.l - 0.5 || x > c.l + c.w + 0.5 ? "none" : "";
    const [line, text] = m.children;
    line.setAttribute("x1", x);
    line.setAttribute("x2", x);
    const end = x + 4 + 6.2 * text.textContent.length > c.l + c.w;
    text.setAttribute("x", end ? x - 4 : x + 4);
    text.setAttribute("text-anchor", end ? "end" : "start");
  }
}

function pbSetZoom(z) {
  pbZoom = z;
  for (const svg of document.querySelectorAll("svg.pb-chart")) pbRedraw(svg);
  document.body.dataset.zoom = z ? z.map((v) => v.toFixed(1)).join("-") : "";
}

function pbDragStart(svg, e) {
  const c = pbChart(svg);
  if (c.kind !== "time" || e.button !== 0) return;
  const p = pbToSVG(svg, e);
  if (p.x < c.l || p.x > c.l + c.w) return;
  const band = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  band.setAttribute("class", "pb-band");
  band.setAttribute("y", c.t);
  band.setAttribute("height", c.h);
  band.setAttribute("fill", "rgba(9, 105, 218, 0.15)");
  svg.appendChild(band);
  pbDrag = { svg, c, from: p.x, to: p.x, band };
  e.preventDefault();
}

function pbDragMove(e) {
  if (!pbDrag) return;
  const { c } = pbDrag;
  pbDrag.to = Math.min(c.l + c.w, Math.max(c.l, pbToSVG(pbDrag.svg, e).x));
  pbDrag.band.setAttribute("x", Math.min(pbDrag.from, pbDrag.to));
  pbDrag.band.setAttribute("width", Math.abs(pbDrag.to - pbDrag.from));
}

function pbDragEnd() {
  if (!pbDrag) return;
  const { c, from, to, band } = pbDrag;
  band.remove();
  pbDrag = null;
  if (Math.abs(to - from) < 5) return;
  const [x0, x1] = pbRange(c);
  const at = (px) => x0 + ((px - c.l) / c.w) * (x1 - x0);
  pbSetZoom([at(Math.min(from, to)), at(Math.max(from, to))]);
}

document.addEventListener("mousemove", (e) => {
  if (pbDrag) return pbDragMove(e);
  const svg = e.target.closest && e.target.closest("svg.pb-chart");
  for (const other of document.querySelectorAll(".pb-cross")) if (other.ownerSVGElement !== svg) other.remove();
  if (svg) pbHover(svg, e);
  else pbHideTip(null);
});
document.addEventListener("mousedown", (e) => {
  const svg = e.target.closest && e.target.closest("svg.pb-chart");
  if (svg) pbDragStart(svg, e);
});
document.addEventListener("mouseup", pbDragEnd);
document.addEventListener("dblclick", (e) => {
  if (e.target.closest && e.target.closest("svg.pb-chart") && pbZoom) pbSetZoom(null);
});

// ---- export ----

function pbSVG(id) {
  const svg = document.getElementById("chart-" + id).cloneNode(true);
  for (const el of svg.querySelectorAll(".pb-cross, .pb-band")) el.remove();
  return new XMLSerializer().serializeToString(svg);
}

function pbDownload(name, url) {
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

function pbExportSVG(id) {
  pbDownload(id + ".svg", URL.createObjectURL(new Blob([pbSVG(id)], { type: "image/svg+xml" })));
}

// pbPNG draws the chart's SVG on a canvas at twice its size and resolves to
// a PNG data URL.
function pbPNG(id) {
  return new Promise((resolve, reject) => {
    const svg = document.getElementById("chart-" + id);
    const w = svg.width.baseVal.value, h = svg.height.baseVal.value, scale = 2;
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = w * scale;
      c.height = h * scale;
      const g = c.getContext("2d");
      g.scale(scale, scale);
      g.drawImage(img, 0, 0, w, h);
      resolve(c.toDataURL("image/png"));
    };
    img.onerror = () => reject(new Error("chart " + id + " did not render"));
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(pbSVG(id));
  });
}

async function pbExportPNG(id) {
  pbDownload(id + ".png", await pbPNG(id));
}

document.addEventListener("click", (e) => {
  const b = e.target.closest("button[data-export]");
  if (!b) return;
  const id = b.dataset.chart;
  if (b.dataset.export === "svg") pbExportSVG(id);
  else pbExportPNG(id).catch((err) => console.error(err));
});

// ---- the dashboard: fresh charts, KPIs and progress every second ----

let pbUpdates = 0;
async function pbRefresh(path) {
  try {
    const res = await fetch(path, { cache: "no-store" });
    if (!res.ok) throw new Error(res.status + " " + res.statusText);
    const d = await res.json();
    const grid = document.getElementById("charts");
    for (const c of d.charts) {
      let fig = document.getElementById("fig-" + c.id);
      if (!fig) {
        fig = document.createElement("figure");
        fig.id = "fig-" + c.id;
        fig.innerHTML = '<figcaption><button data-export="svg" data-chart="' + c.id + '">SVG</button><button data-export="png" data-chart="' + c.id + '">PNG</button></figcaption><div class="plot"></div>';
        grid.appendChild(fig);
      }
      if (pbDrag && pbDrag.svg.id === "chart-" + c.id) continue; // not under a drag
      fig.querySelector(".plot").innerHTML = c.svg;
      pbRedraw(fig.querySelector("svg.pb-chart"));
    }
    const kpis = document.getElementById("kpis-0");
    if (kpis && d.table) kpis.innerHTML = d.table;
    document.getElementById("progress").textContent = d.progress;
    pbUpdates++;
    document.body.dataset.updates = pbUpdates;
    if (d.done) {
      document.getElementById("progress").textContent = d.progress + " (finished)";
      return;
    }
  } catch (err) {
    document.getElementById("progress").textContent = "dashboard: " + err.message + " (the run may have ended)";
    return;
  }
  setTimeout(() => pbRefresh(path), 1000);
}

const pbLive = document.body.dataset.live;
if (pbLive) pbRefresh(pbLive);
