// Reading V8 .cpuprofile files (node --cpu-prof): name bundled frames by their own files, cut
// to a time window, summarize as markdown, draw as a flame graph SVG. Used by loadtest/profile.mjs.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

const IDLE = new Set(['(idle)', '(program)']);

// What tools/bundle.mjs writes: the front's dist/server.js and the worker's dist/worker/*.js, named
// by their real path, dist-builds/<id>/… (dist is a symlink to the build, tools/build.mjs), or
// dist/… where dist is the build itself (the image).
const BUNDLE = /\/dist(-builds\/[^/]+)?\/(server\.js|worker\/[^/]+\.js)$/;

/**
 * Renames each frame of a bundle to the file and line it was bundled from, through the bundle's
 * source map: "CPU by package" reads a frame's file, which in a bundle is the bundle's.
 */
export function unbundle(profile) {
  const maps = new Map();
  const mapOf = (url) => {
    if (!maps.has(url)) {
      const file = BUNDLE.test(url) ? `${fileURLToPath(url)}.map` : null;
      maps.set(url, file && existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : null);
    }
    return maps.get(url);
  };
  const nodes = profile.nodes.map((n) => {
    const { url, lineNumber, columnNumber } = n.callFrame;
    const map = url.startsWith('file://') && lineNumber >= 0 ? mapOf(url) : null;
    const entry = map?.findEntry(lineNumber, columnNumber);
    if (!entry?.originalSource) return n;
    return { ...n, callFrame: { ...n.callFrame, url: new URL(entry.originalSource, url).href, lineNumber: entry.originalLine, columnNumber: entry.originalColumn } };
  });
  return { ...profile, nodes };
}

/** Keeps the samples taken between `fromUs` and `toUs` (CLOCK_MONOTONIC µs, V8's clock too); prunes nodes left empty. */
export function trimToWindow(profile, fromUs, toUs) {
  const samples = [];
  const deltas = [];
  let t = profile.startTime;
  let last = null;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    samples.push(profile.samples[i]);
    deltas.push(last === null ? 0 : t - last);
    last = t;
  }
  const hits = new Map();
  for (const id of samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const keep = new Set();
  const visit = (node) => {
    let any = hits.has(node.id);
    for (const c of node.children ?? []) if (visit(byId.get(c))) any = true;
    if (any) keep.add(node.id);
    return any;
  };
  visit(profile.nodes[0]);
  const nodes = profile.nodes.filter((n) => keep.has(n.id)).map((n) => ({ ...n, hitCount: hits.get(n.id) ?? 0, children: (n.children ?? []).filter((c) => keep.has(c)) }));
  const startTime = last === null ? profile.startTime : last - deltas.reduce((a, b) => a + b, 0);
  return { nodes, startTime, endTime: last ?? profile.startTime, samples, timeDeltas: deltas };
}

function tree(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  // Each sample stands for the time until the next one.
  for (let i = 0; i < profile.samples.length; i++) {
    const d = profile.timeDeltas[i + 1] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + d);
  }
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return { byId, self, parent, root: profile.nodes[0] };
}

const shortUrl = (url) => url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist|src|workers|protocol|loadtest)\//, '$1/');
const frameName = (n) => `${n.callFrame.functionName || '(anonymous)'}${n.callFrame.url ? ` ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}` : ''}`;

/** Which package or part of the gateway a frame belongs to; null for Node internals and natives (they count for their caller). */
function category(n) {
  const { url, functionName } = n.callFrame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (!url || url.startsWith('node:')) return null;
  const nm = url.split('node_modules/')[1];
  if (nm) return nm.startsWith('@') ? nm.split('/').slice(0, 2).join('/') : nm.split('/')[0];
  if (url.startsWith('wasm://')) return null;
  return shortUrl(url);
}

/** Busy time (µs) by package or module, natives and Node internals counted for their nearest categorized caller. */
function byPart(profile) {
  const { byId, self, parent } = tree(profile);
  let busy = 0;
  const byCategory = new Map();
  const byFunction = new Map();
  for (const [id, t] of self) {
    const node = byId.get(id);
    if (IDLE.has(node.callFrame.functionName)) continue;
    busy += t;
    let cat = category(node);
    for (let up = parent.get(id); cat === null && up !== undefined; up = parent.get(up)) cat = category(byId.get(up));
    cat ??= 'Node internals';
    byCategory.set(cat, (byCategory.get(cat) ?? 0) + t);
    const name = frameName(node);
    byFunction.set(name, (byFunction.get(name) ?? 0) + t);
  }
  return { busy, byCategory, byFunction };
}

/**
 * Markdown: busy CPU per request by package or module, one column per run
 * (`runs`: { name, profiles, requests }, the profiles of all of a run's
 * threads), sorted by the most any run spends on it beyond the first. With
 * the bare relay first, a row is what one part of the gateway costs per
 * request over a relay that has no features.
 */
export function costTable(runs) {
  const perRequest = runs.map(({ profiles, requests }) => {
    const parts = new Map();
    for (const profile of profiles) for (const [cat, t] of byPart(profile).byCategory) parts.set(cat, (parts.get(cat) ?? 0) + t / requests);
    return parts;
  });
  const [first, ...others] = perRequest;
  const cats = [...new Set(perRequest.flatMap((m) => [...m.keys()]))];
  const beyond = (cat) => Math.max(...others.map((m) => (m.get(cat) ?? 0) - (first.get(cat) ?? 0)));
  cats.sort((a, b) => beyond(b) - beyond(a));
  const cell = (m, cat) => (m.has(cat) ? (m.get(cat) ?? 0).toFixed(1) : '—');
  const total = (m) => [...m.values()].reduce((a, b) => a + b, 0).toFixed(1);
  return [
    `| package or module | ${runs.map((r) => `${r.name}, µs per request`).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    ...cats.filter((cat) => perRequest.some((m) => (m.get(cat) ?? 0) >= 0.5)).map((cat) => `| \`${cat}\` | ${perRequest.map((m) => cell(m, cat)).join(' | ')} |`),
    `| **all busy CPU** | ${perRequest.map((m) => `**${total(m)}**`).join(' | ')} |`,
  ].join('\n');
}

/** Markdown: busy time, CPU by package (natives counted for their caller), top functions by self time. */
export function summarize(profile, top = 20) {
  const { busy, byCategory, byFunction } = byPart(profile);
  const pct = (t) => `${((100 * t) / busy).toFixed(1)} %`;
  const rows = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, t]) => `| \`${k}\` | ${pct(t)} |`).join('\n');
  return `Busy ${(busy / 1000).toFixed(0)} ms in a window of ${((profile.endTime - profile.startTime) / 1000).toFixed(0)} ms.

| package or module | share of busy CPU |
|---|---|
${rows(byCategory, 16)}

| function (self time) | share of busy CPU |
|---|---|
${rows(byFunction, top)}`;
}

const COLORS = {
  ours: '#f0a030', undici: '#5b9bd5', 'uWebSockets.js': '#70ad47', pino: '#9dc3e6', 'sonic-boom': '#9dc3e6',
  zod: '#b084cc', 'garbage collection': '#e05050', native: '#e0d050', node: '#b0b0b0',
};
const colorOf = (n) => {
  const cat = category(n);
  if (cat === null) return n.callFrame.url ? COLORS.node : COLORS.native;
  if (COLORS[cat]) return COLORS[cat];
  return /^(dist|src|workers|protocol)\//.test(cat) ? COLORS.ours : COLORS.node;
};
const escapeXml = (s) => s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]);

/** A flame graph: one box per call-tree node, width = its inclusive CPU time, callers below callees. */
export function flameGraphSvg(profile, title, width = 1200) {
  const { self, root } = tree(profile);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const total = new Map();
  const inclusive = (node) => {
    let t = IDLE.has(node.callFrame.functionName) ? 0 : self.get(node.id) ?? 0;
    for (const c of node.children ?? []) t += inclusive(byId.get(c));
    total.set(node.id, t);
    return t;
  };
  const busy = inclusive(root);
  const rowHeight = 16;
  const boxes = [];
  let maxDepth = 0;
  const place = (node, x, depth) => {
    const t = total.get(node.id);
    const w = (t / busy) * width;
    if (w < 0.3) return;
    maxDepth = Math.max(maxDepth, depth);
    boxes.push({ node, x, w, depth, t });
    let cx = x;
    for (const c of node.children ?? []) {
      const child = byId.get(c);
      place(child, cx, depth + 1);
      cx += (total.get(c) / busy) * width;
    }
  };
  place(root, 0, 0);
  const height = (maxDepth + 1) * rowHeight + 40;
  const out = boxes.map(({ node, x, w, depth, t }) => {
    const y = height - (depth + 1) * rowHeight - 8;
    const name = depth === 0 ? 'all busy CPU' : frameName(node);
    const label = w > 35 ? escapeXml(name.slice(0, Math.floor((w - 6) / 6.5))) : '';
    return `<g><title>${escapeXml(name)}: ${(t / 1000).toFixed(1)} ms, ${((100 * t) / busy).toFixed(1)} %</title><rect x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${rowHeight - 1}" fill="${colorOf(node)}" rx="2"/>${label ? `<text x="${(x + 3).toFixed(2)}" y="${y + 11.5}">${label}</text>` : ''}</g>`;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="11">
<text x="4" y="16" font-size="13">${escapeXml(title)}: ${(busy / 1000).toFixed(0)} ms busy (orange: Switchyard, blue: undici, green: uWS, light blue: logging, purple: zod, grey: Node, yellow: native, red: GC)</text>
${out.join('\n')}
</svg>
`;
}
