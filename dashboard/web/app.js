// The colo dashboard: draws the frames the server sends (dashboard.Frame,
// as server-sent events on /events) as SVG charts. No library, no
// network but the page's own server.
"use strict";

// What the page has drawn, for tests and for a curious reader's console.
// lossUpdates counts the frames that added points to the loss chart.
window.coloDashboard = { frames: 0, lossPoints: 0, lossUpdates: 0, last: null };

const palette = ["#2f6fdf", "#e0592a", "#2a9d5b", "#8e44ad", "#c49a00", "#d6336c", "#0f8b8d", "#6c757d"];

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

// fmt writes a number with an SI prefix: 1.2k, 3.4M.
function fmt(v, unit) {
  unit = unit || "";
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const a = Math.abs(v);
  const steps = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [d, p] of steps) {
    if (a >= d) return Number((v / d).toPrecision(3)).toString() + " " + p + unit;
  }
  if (a === 0) return "0" + (unit ? " " + unit : "");
  if (a < 1e-3) return v.toExponential(1) + (unit ? " " + unit : "");
  return Number(v.toPrecision(3)).toString() + (unit ? " " + unit : "");
}

// ticks returns about n round values covering [lo, hi].
function ticks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

function empty(text) { return '<div class="empty">' + esc(text) + "</div>"; }

// lineChart draws series [{name, color, dash, pts: [[x, y]]}].
function lineChart(series, opt) {
  const W = 440, H = 210, L = 52, R = 10, T = 22, B = 34;
  const pts = series.flatMap(s => s.pts).filter(p => isFinite(p[0]) && isFinite(p[1]));
  if (pts.length === 0) return empty(opt.empty || "no data yet");
  let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
  let y0 = Math.min(...pts.map(p => p[1])), y1 = Math.max(...pts.map(p => p[1]));
  if (opt.yZero) y0 = Math.min(0, y0);
  if (opt.yMax !== undefined) y1 = Math.max(y1, opt.yMax);
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y1 = y0 + (Math.abs(y0) || 1) * 0.1; y0 = y0 - (Math.abs(y0) || 1) * 0.1; }
  const pad = (y1 - y0) * 0.05;
  if (!opt.yZero || y0 < 0) y0 -= pad;
  y1 += pad;
  const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const Y = y => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  let s = '<svg viewBox="0 0 ' + W + " " + H + '" role="img">';
  for (const v of ticks(y0, y1, 4)) {
    s += '<line class="grid" x1="' + L + '" x2="' + (W - R) + '" y1="' + Y(v) + '" y2="' + Y(v) + '"/>';
    s += '<text class="tick" x="' + (L - 4) + '" y="' + (Y(v) + 4) + '" text-anchor="end">' + esc(fmt(v)) + "</text>";
  }
  for (const v of ticks(x0, x1, 5)) {
    s += '<text class="tick" x="' + X(v) + '" y="' + (H - B + 14) + '" text-anchor="middle">' + esc(fmt(v)) + "</text>";
  }
  s += '<line class="axis" x1="' + L + '" x2="' + (W - R) + '" y1="' + (H - B) + '" y2="' + (H - B) + '"/>';
  s += '<line class="axis" x1="' + L + '" x2="' + L + '" y1="' + T + '" y2="' + (H - B) + '"/>';
  s += '<text class="tick" x="' + ((L + W - R) / 2) + '" y="' + (H - 4) + '" text-anchor="middle">' + esc(opt.x) + "</text>";
  let lx = L + 8;
  series.forEach(se => {
    const p = se.pts.filter(q => isFinite(q[0]) && isFinite(q[1]));
    if (p.length === 0) return;
    const d = p.map((q, i) => (i ? "L" : "M") + X(q[0]).toFixed(1) + " " + Y(q[1]).toFixed(1)).join("");
    s += '<path d="' + d + '" fill="none" stroke="' + se.color + '" stroke-width="1.8"' + (se.dash ? ' stroke-dasharray="5 3"' : "") + "/>";
    if (p.length < 40) {
      for (const q of p) s += '<circle cx="' + X(q[0]).toFixed(1) + '" cy="' + Y(q[1]).toFixed(1) + '" r="2" fill="' + se.color + '"><title>' + esc(se.name + ": " + fmt(q[1], opt.unit)) + "</title></circle>";
    }
    s += '<rect x="' + lx + '" y="6" width="10" height="3" fill="' + se.color + '"/>';
    s += '<text x="' + (lx + 13) + '" y="11">' + esc(se.name) + "</text>";
    lx += 22 + 6.5 * se.name.length;
  });
  return s + "</svg>";
}

// barChart draws rows [{label, value, text, color}] as horizontal bars.
function barChart(rows, opt) {
  if (rows.length === 0) return empty(opt.empty || "no data yet");
  const W = 440, rowH = 18, L = opt.labelWidth || 130, R = 150;
  const H = rows.length * rowH + 4;
  const max = Math.max(...rows.map(r => r.value), 1e-300);
  let s = '<svg viewBox="0 0 ' + W + " " + H + '" role="img">';
  rows.forEach((r, i) => {
    const y = 2 + i * rowH;
    const w = Math.max(0, r.value / max * (W - L - R));
    s += '<text x="' + (L - 6) + '" y="' + (y + 12) + '" text-anchor="end">' + esc(r.label) + "</text>";
    s += '<rect x="' + L + '" y="' + (y + 2) + '" width="' + w.toFixed(1) + '" height="' + (rowH - 5) + '" fill="' + (r.color || palette[0]) + '"><title>' + esc(r.label + ": " + r.text) + "</title></rect>";
    s += '<text class="tick" x="' + (L + w + 4) + '" y="' + (y + 12) + '">' + esc(r.text) + "</text>";
  });
  return s + "</svg>";
}

// heatColor maps t in [0, 1] to a white-to-blue scale.
function heatColor(t) {
  const a = [247, 251, 255], b = [8, 48, 107];
  const c = a.map((v, i) => Math.round(v + (b[i] - v) * t));
  return "rgb(" + c.join(",") + ")";
}

function heatmap(f) {
  const n = f.nodes ? f.nodes.length : 0;
  if (n === 0) return empty("no traffic yet");
  const L = 86, T = 70, cell = Math.max(18, Math.min(44, Math.floor(340 / n)));
  const W = L + n * cell + 120, H = T + n * cell + 8;
  let max = 0;
  f.bytes.forEach(row => row.forEach(v => { max = Math.max(max, v); }));
  const lmax = Math.log1p(max);
  let s = '<svg viewBox="0 0 ' + W + " " + H + '" role="img" style="max-width:' + W + 'px">';
  f.nodes.forEach((name, i) => {
    s += '<text x="' + (L - 6) + '" y="' + (T + i * cell + cell / 2 + 4) + '" text-anchor="end">' + esc(name) + "</text>";
    const x = L + i * cell + cell / 2;
    s += '<text x="' + x + '" y="' + (T - 6) + '" transform="rotate(-45 ' + x + " " + (T - 6) + ')">' + esc(name) + "</text>";
  });
  f.bytes.forEach((row, i) => row.forEach((v, j) => {
    const t = lmax > 0 ? Math.log1p(v) / lmax : 0;
    const rate = f.rates && f.rates[i] ? f.rates[i][j] : 0;
    s += '<rect x="' + (L + j * cell) + '" y="' + (T + i * cell) + '" width="' + (cell - 1) + '" height="' + (cell - 1) + '" fill="' + heatColor(t) + '">' +
      "<title>" + esc(f.nodes[i] + " → " + f.nodes[j] + ": " + fmt(v, "B") + ", " + fmt(rate, "B/s")) + "</title></rect>";
    if (cell >= 34 && v > 0) {
      s += '<text x="' + (L + j * cell + cell / 2) + '" y="' + (T + i * cell + cell / 2 + 4) + '" text-anchor="middle" style="fill:' + (t > 0.55 ? "#fff" : "#1d2430") + ';font-size:9px">' + esc(fmt(v)) + "</text>";
    }
  }));
  // The legend: a log scale from 0 to the largest cell.
  const lx = L + n * cell + 24, lh = Math.min(n * cell, 160);
  for (let k = 0; k < 20; k++) {
    s += '<rect x="' + lx + '" y="' + (T + lh - (k + 1) * lh / 20) + '" width="12" height="' + (lh / 20 + 0.5) + '" fill="' + heatColor(k / 19) + '"/>';
  }
  s += '<text class="tick" x="' + (lx + 16) + '" y="' + (T + 8) + '">' + esc(fmt(max, "B")) + "</text>";
  s += '<text class="tick" x="' + (lx + 16) + '" y="' + (T + lh) + '">0 (log scale)</text>';
  return s + "</svg>";
}

function costTable(f) {
  const runs = f.runs || [];
  if (runs.length === 0) return empty("no run yet");
  let s = "<table><tr><th>placement</th><th>T_max</th><th>R_max</th><th>T_sum</th><th>predicted</th><th>inter</th><th>inner</th></tr>";
  for (const r of runs) {
    const c = r.cost, m = r.measured || {};
    s += "<tr><td>" + esc(r.name) + "</td><td>" + (c ? esc(fmt(c.T_max)) : "–") + "</td><td>" + (c && c.R_max !== undefined ? esc(fmt(c.R_max)) : "–") + "</td><td>" + (c ? esc(fmt(c.T_sum)) : "–") + "</td><td>" +
      (m.predicted_values ? esc(fmt(m.predicted_values)) : "–") + "</td><td>" + esc(fmt(m.inter_bytes || 0, "B")) + "</td><td>" + esc(fmt(m.inner_bytes || 0, "B")) + "</td></tr>";
  }
  s += '</table><p class="muted">T_max, T_sum: the values per round that the cost model predicts cross machines (at the busiest machine; in all). R_max: the busiest machine\'s link under BSP, where a worker\'s pulls must be in before its pushes leave, max(T_i, 2 · its pulls). Predicted: T_sum · width · rounds so far, in values. Inter, inner: the bytes measured between the workers and servers of different machines, and of the same machine.</p>';
  return s;
}

// costBars puts each machine's share of the cost model's traffic T_i
// beside its share of the measured inter-machine bytes.
function costBars(f) {
  const r = (f.runs || [])[(f.runs || []).length - 1];
  if (!r) return "";
  const model = r.cost ? r.cost.traffic || [] : [];
  const meas = (r.measured && r.measured.machines) || [];
  const k = Math.max(model.length, meas.length);
  if (k === 0) return "";
  const sm = model.reduce((a, b) => a + b, 0), sb = meas.reduce((a, b) => a + b, 0);
  const rows = [];
  for (let i = 0; i < k; i++) {
    if (model.length) rows.push({ label: "machine " + i + " T_" + i, value: sm ? (model[i] || 0) / sm : 0, text: (sm ? (100 * (model[i] || 0) / sm).toFixed(1) : "0") + "% (" + fmt(model[i] || 0) + " values)", color: palette[1] });
    rows.push({ label: "machine " + i + " measured", value: sb ? (meas[i] || 0) / sb : 0, text: (sb ? (100 * (meas[i] || 0) / sb).toFixed(1) : "0") + "% (" + fmt(meas[i] || 0, "B") + ")", color: palette[0] });
  }
  return '<p class="muted">Each machine\'s share of the traffic between machines: the cost model\'s T_i, and the bytes measured.</p>' + barChart(rows, { labelWidth: 150 });
}

function events(f) {
  const ev = f.events || [];
  if (!ev.length) return '<p class="muted">none</p>';
  const esc = s => s.replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  return "<ul>" + ev.slice().reverse().map(e => "<li><b>" + e.seconds.toFixed(1) + " s</b> " + esc(e.text) + "</li>").join("") + "</ul>";
}

function render(f) {
  const d = window.coloDashboard;
  d.frames++;
  d.last = f;
  document.getElementById("status").textContent = f.status;
  document.getElementById("clock").textContent = f.seconds.toFixed(1) + " s, frame " + f.seq;
  document.getElementById("heatmap").innerHTML = heatmap(f);
  document.getElementById("events").innerHTML = events(f);

  const links = (f.links || []).slice(0, 12).map(l => ({ label: l.from + " → " + l.to, value: l.rate, text: fmt(l.rate, "B/s") + " (" + fmt(l.bytes, "B") + ")" }));
  document.getElementById("links").innerHTML = barChart(links, { labelWidth: 170, empty: "no link yet" });

  const runs = f.runs || [];
  const cur = runs[runs.length - 1];
  document.getElementById("rates").innerHTML = cur ? lineChart([
    { name: "between machines", color: palette[0], pts: (cur.traffic || []).map(p => [p.seconds, p.inter]) },
    { name: "within machines", color: palette[2], pts: (cur.traffic || []).map(p => [p.seconds, p.inner]) },
  ], { x: "seconds of " + cur.name, unit: "B/s", yZero: true }) : empty("no run yet");

  document.getElementById("cost").innerHTML = costTable(f);
  document.getElementById("costbars").innerHTML = costBars(f);

  const servers = (f.servers || []).flatMap(s => [
    { label: s.name + " pushed", value: s.keys_pushed, text: fmt(s.keys_pushed) + " keys, " + fmt(s.pushes) + " pushes", color: palette[0] },
    { label: s.name + " pulled", value: s.keys_pulled, text: fmt(s.keys_pulled) + " keys, " + fmt(s.pulls) + " pulls", color: palette[2] },
    { label: s.name + " stores", value: s.keys, text: fmt(s.keys) + " keys", color: "#9aa4b2" },
  ]);
  document.getElementById("servers").innerHTML = barChart(servers, { labelWidth: 130, empty: "no server seen (the scheduler sees only its own links)" });

  const loss = runs.map((r, i) => ({ name: r.name, color: palette[i % palette.length], pts: (r.passes || []).map(p => [p.seconds, p.train_loss]) }));
  const points = loss.reduce((a, s) => a + s.pts.filter(p => p[1] !== null).length, 0);
  if (points > d.lossPoints) d.lossUpdates++;
  d.lossPoints = points;
  document.getElementById("loss").innerHTML = lineChart(loss, { x: "seconds of training", empty: "no pass yet" });

  const acc = [];
  runs.forEach((r, i) => {
    const c = palette[i % palette.length];
    const val = (r.checks || []).filter(k => k.accuracy !== undefined).map(k => [k.seconds, k.accuracy]);
    if (val.length) acc.push({ name: r.name + " validation", color: c, pts: val });
    const tr = (r.passes || []).filter(p => p.train_accuracy !== undefined && p.train_accuracy !== null).map(p => [p.seconds, p.train_accuracy]);
    if (tr.length) acc.push({ name: r.name + " training", color: c, dash: true, pts: tr });
  });
  document.getElementById("accuracy").innerHTML = lineChart(acc, { x: "seconds of training", empty: "no accuracy yet (classifiers only)" });

  const rt = runs.map((r, i) => ({ name: r.name, color: palette[i % palette.length], pts: (r.passes || []).map(p => [p.pass, p.round_seconds]) }));
  document.getElementById("rounds").innerHTML = lineChart(rt, { x: "pass", unit: "s", yZero: true, empty: "no pass yet" });
}

function connect() {
  const conn = document.getElementById("conn");
  const es = new EventSource("events");
  es.addEventListener("frame", ev => {
    conn.textContent = "live";
    const f = JSON.parse(ev.data);
    render(f);
    if (f.ended) {
      es.close();
      conn.textContent = "the job has ended";
    }
  });
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      conn.textContent = "disconnected";
    } else {
      conn.textContent = "reconnecting…";
    }
  };
}

connect();
