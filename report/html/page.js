// Chart export, and the live dashboard's refresh. No network but the page's
// own origin; no libraries.
"use strict";

function pbSVG(id) {
  return new XMLSerializer().serializeToString(document.getElementById("chart-" + id));
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

// The dashboard: fetch fresh charts and progress every second.
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
      fig.querySelector(".plot").innerHTML = c.svg;
    }
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
