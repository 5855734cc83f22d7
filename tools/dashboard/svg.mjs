// Draws a Grafana dashboard's panels as one SVG, in Grafana's dark theme and on its grid (24 columns,
// 30 px a row): rows as section titles, time series as lines with axes and a legend, stats as the
// last value over a sparkline. It draws what tools/render-dashboard.mjs evaluated; it is a picture
// of the dashboard, not Grafana.

const GRID_COLUMNS = 24;
const ROW_PX = 30;
const GAP = 8;
const HEADER = 58;
const THEME = { page: '#111217', panel: '#181b1f', border: '#2c3235', grid: '#2c3235', text: '#ccccdc', dim: '#8e8e9e' };
const PALETTE = ['#73bf69', '#f2cc0c', '#8ab8ff', '#ff780a', '#f2495c', '#5794f2', '#b877d9', '#705da0', '#37872d', '#fade2a', '#447ebc', '#c15c17', '#890f02', '#0a437c', '#6d1f62', '#584477'];
const STAT_COLORS = { green: '#73bf69', orange: '#ff9830', red: '#f2495c', yellow: '#fade2a' };
const CHAR_PX = 6.2; // 11 px text, for fitting legends

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const text = (x, y, s, { size = 11, fill = THEME.text, anchor = 'start', weight = 'normal' } = {}) =>
  `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-size="${size}" fill="${fill}" text-anchor="${anchor}" font-weight="${weight}">${esc(s)}</text>`;

/** A number in a panel's unit, as Grafana writes it (a few of its units). */
export function formatValue(value, unit, decimals) {
  if (!Number.isFinite(value)) return '–';
  const fixed = (v, d = decimals ?? (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)) => Number(v.toFixed(d)).toString();
  const scaled = (v, steps, base) => {
    let i = 0;
    while (Math.abs(v) >= base && i < steps.length - 1) {
      v /= base;
      i++;
    }
    return `${fixed(v)}${steps[i]}`;
  };
  switch (unit) {
    case 's':
      if (value === 0) return '0 s';
      if (Math.abs(value) < 0.001) return `${fixed(value * 1e6)} µs`;
      if (Math.abs(value) < 1) return `${fixed(value * 1000)} ms`;
      return `${fixed(value)} s`;
    case 'percentunit':
      return `${fixed(value * 100)}%`;
    case 'bytes':
      return scaled(value, [' B', ' KiB', ' MiB', ' GiB'], 1024);
    case 'reqps':
      return `${scaled(value, ['', 'K', 'M'], 1000)} req/s`;
    default:
      return scaled(value, ['', 'K', 'M', 'B'], 1000);
  }
}

/** Ticks for [min, max]: about `count` round steps. */
function ticks(min, max, count = 4) {
  if (max <= min) max = min + 1;
  const raw = (max - min) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

const clock = (t) => new Date(t * 1000).toISOString().slice(11, 19);

/** The panel's series drawn as a time series: axes, grid, lines, a legend. */
function timeseries(panel, series, box, timeRange) {
  const defaults = panel.fieldConfig?.defaults ?? {};
  const unit = defaults.unit ?? 'short';
  const legendRows = Math.min(3, Math.max(1, Math.ceil(series.length / Math.max(1, Math.floor((box.w - 16) / 150)))));
  const plot = { x: box.x + 62, y: box.y + 30, w: box.w - 74, h: box.h - 30 - 22 - legendRows * 15 };
  const values = series.flatMap((s) => s.points.map(([, v]) => v)).filter(Number.isFinite);
  let min = defaults.min ?? Math.min(0, ...values);
  let max = defaults.max ?? Math.max(...values, min + 1e-9);
  if (defaults.max === undefined) max = max + (max - min) * 0.08;
  if (!Number.isFinite(min)) min = 0;
  const [t0, t1] = timeRange;
  const px = (t) => plot.x + ((t - t0) / (t1 - t0)) * plot.w;
  const py = (v) => plot.y + plot.h - ((v - min) / (max - min || 1)) * plot.h;
  const out = [];
  // A panel with value mappings (0 healthy, 1 half-open, …) labels its axis with them, as Grafana does.
  const mapped = Object.assign({}, ...(defaults.mappings ?? []).filter((m) => m.type === 'value').map((m) => m.options));
  const mappedTicks = Object.keys(mapped).map(Number);
  for (const v of mappedTicks.length ? mappedTicks : ticks(min, max)) {
    if (v < min || v > max) continue;
    const y = py(v);
    out.push(`<line x1="${plot.x}" y1="${y.toFixed(1)}" x2="${plot.x + plot.w}" y2="${y.toFixed(1)}" stroke="${THEME.grid}" stroke-width="1"/>`);
    out.push(text(plot.x - 6, y + 4, mapped[v]?.text ?? formatValue(v, unit), { size: 10, fill: THEME.dim, anchor: 'end' }));
  }
  const span = t1 - t0;
  const step = [5, 10, 15, 30, 60, 120].find((s) => span / s <= Math.max(2, plot.w / 90)) ?? 300;
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    const x = px(t);
    out.push(`<line x1="${x.toFixed(1)}" y1="${plot.y}" x2="${x.toFixed(1)}" y2="${plot.y + plot.h}" stroke="${THEME.grid}" stroke-width="1" stroke-dasharray="2,3"/>`);
    out.push(text(x, plot.y + plot.h + 14, clock(t), { size: 10, fill: THEME.dim, anchor: 'middle' }));
  }
  const stepped = defaults.custom?.lineInterpolation === 'stepAfter';
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    let path = '';
    let last = null;
    for (const [t, v] of s.points) {
      if (!Number.isFinite(v)) {
        last = null;
        continue;
      }
      const x = px(t).toFixed(1);
      const y = py(Math.min(max, Math.max(min, v))).toFixed(1);
      if (last === null) path += `M${x},${y}`;
      else path += stepped ? `H${x}V${y}` : `L${x},${y}`;
      last = v;
    }
    if (path) out.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="1.5" stroke-linejoin="round"/>`);
  });
  if (series.length === 0) out.push(text(plot.x + plot.w / 2, plot.y + plot.h / 2, 'No data', { size: 14, fill: THEME.dim, anchor: 'middle' }));
  // The legend: as many names as fit in its rows, then "+N more".
  let x = box.x + 10;
  let row = 0;
  const legendY = plot.y + plot.h + 32;
  for (const [i, s] of series.entries()) {
    const width = 18 + s.name.length * CHAR_PX + 14;
    if (x + width > box.x + box.w - 10 && x > box.x + 10) {
      row++;
      x = box.x + 10;
    }
    if (row >= legendRows) {
      out.push(text(box.x + box.w - 10, legendY + (legendRows - 1) * 15, `+${series.length - i} more`, { size: 10, fill: THEME.dim, anchor: 'end' }));
      break;
    }
    const y = legendY + row * 15;
    out.push(`<rect x="${x}" y="${y - 4}" width="12" height="3" fill="${PALETTE[i % PALETTE.length]}"/>`);
    out.push(text(x + 17, y, s.name));
    x += width;
  }
  return out.join('');
}

/** The panel's first series drawn as a stat: its last value, coloured by the thresholds, over a sparkline. */
function stat(panel, series, box, timeRange) {
  const defaults = panel.fieldConfig?.defaults ?? {};
  const points = (series[0]?.points ?? []).filter(([, v]) => Number.isFinite(v));
  const last = points.length ? points[points.length - 1][1] : NaN;
  const steps = defaults.thresholds?.steps ?? [{ color: 'green', value: null }];
  const color = STAT_COLORS[[...steps].reverse().find((s) => s.value === null || last >= s.value)?.color] ?? STAT_COLORS.green;
  const out = [];
  if (points.length > 1) {
    const values = points.map(([, v]) => v);
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    const [t0, t1] = timeRange;
    const px = (t) => box.x + ((t - t0) / (t1 - t0)) * box.w;
    const py = (v) => box.y + box.h - 4 - ((v - lo) / (hi - lo || 1)) * (box.h * 0.4);
    const line = points.map(([t, v], i) => `${i ? 'L' : 'M'}${px(t).toFixed(1)},${py(v).toFixed(1)}`).join('');
    out.push(`<path d="${line}L${px(points[points.length - 1][0]).toFixed(1)},${box.y + box.h}L${px(points[0][0]).toFixed(1)},${box.y + box.h}Z" fill="${color}" fill-opacity="0.15" stroke="none"/>`);
    out.push(`<path d="${line}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
  }
  out.push(text(box.x + box.w / 2, box.y + box.h / 2 + 14, formatValue(last, defaults.unit, defaults.decimals), { size: 30, fill: color, anchor: 'middle', weight: 'bold' }));
  return out.join('');
}

/**
 * The whole dashboard as an SVG string. `data` maps a panel id to its series ([{ name, points: [[t, v]] }]);
 * `timeRange` is [first, last] in seconds; `variables` the values shown in the variable bar; `caption` a
 * line under the title (how the picture was made).
 */
export function drawDashboard(dashboard, data, { timeRange, variables, caption, width = 1600 }) {
  const cell = (width - GAP) / GRID_COLUMNS;
  const bottom = Math.max(...dashboard.panels.map((p) => p.gridPos.y + p.gridPos.h));
  const height = HEADER + bottom * ROW_PX + GAP;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Inter, Helvetica, Arial, sans-serif">`,
    `<rect width="${width}" height="${height}" fill="${THEME.page}"/>`,
    text(GAP, 22, dashboard.title, { size: 17, weight: 'bold' }),
    text(GAP + dashboard.title.length * 10 + 16, 22, caption, { size: 11, fill: THEME.dim }),
    text(width - GAP, 22, `${clock(timeRange[0])} to ${clock(timeRange[1])} UTC`, { size: 12, anchor: 'end' }),
  ];
  // The variable bar: a label box and a value box per variable, as Grafana draws its pickers.
  let barX = GAP;
  for (const [name, value] of Object.entries(variables)) {
    const labelWidth = name.length * 7 + 16;
    const valueWidth = value.length * 7 + 24;
    out.push(`<rect x="${barX}" y="30" width="${labelWidth}" height="20" fill="${THEME.panel}" stroke="${THEME.border}"/>`, text(barX + 8, 44, name, { size: 12, fill: THEME.dim }));
    out.push(`<rect x="${barX + labelWidth}" y="30" width="${valueWidth}" height="20" fill="${THEME.page}" stroke="${THEME.border}"/>`, text(barX + labelWidth + 8, 44, value, { size: 12 }));
    barX += labelWidth + valueWidth + GAP;
  }
  for (const panel of dashboard.panels) {
    const { x, y, w, h } = panel.gridPos;
    const box = { x: GAP + x * cell, y: HEADER + y * ROW_PX, w: w * cell - GAP, h: h * ROW_PX - GAP };
    if (panel.type === 'row') {
      out.push(text(box.x, box.y + 20, panel.title, { size: 14, weight: 'bold' }));
      continue;
    }
    out.push(`<g><rect x="${box.x.toFixed(1)}" y="${box.y}" width="${box.w.toFixed(1)}" height="${box.h}" rx="2" fill="${THEME.panel}" stroke="${THEME.border}"/>`);
    out.push(text(box.x + 8, box.y + 18, panel.title, { size: 12, weight: 'bold' }));
    const series = data.get(panel.id) ?? [];
    out.push(panel.type === 'stat' ? stat(panel, series, box, timeRange) : timeseries(panel, series, box, timeRange));
    out.push('</g>');
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
