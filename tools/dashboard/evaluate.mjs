// A small PromQL evaluator over scrapes kept in memory, for the forms the dashboard uses (the trees of
// promql.mjs): instant and range selectors, rate / irate / increase / delta and the _over_time
// functions, histogram_quantile, sum / min / max / avg / count by or without, unary minus, and binary
// operators between scalars and vectors (one-to-one matching with on / ignoring; and / or / unless).
// Prometheus's semantics where they matter for a picture: a 5-minute lookback for instant selectors,
// counter resets and Prometheus's extrapolation in rate / increase / delta, histogram_quantile's
// linear interpolation within a bucket. It is what tools/render-dashboard.mjs draws with and what test/dashboard.test.ts
// runs each panel through; it is not a Prometheus.
import { parsePromql } from './promql.mjs';

const LOOKBACK_SECONDS = 300;

/** Scrapes in time order: each series' points, by metric name. */
export class SeriesStore {
  /** name → (label key → { labels, points: [[t, v]] }) */
  #byName = new Map();

  /**
   * Adds one scrape's samples at time `t` (seconds), with `target` labels on every sample as
   * Prometheus attaches them to what it scrapes (`instance`, `job`).
   */
  add(t, samples, target = {}) {
    for (const { name, labels, value } of samples) {
      const all = { ...labels, ...target };
      let series = this.#byName.get(name);
      if (!series) this.#byName.set(name, (series = new Map()));
      const key = labelKey(all);
      let one = series.get(key);
      if (!one) series.set(key, (one = { labels: all, points: [] }));
      one.points.push([t, value]);
    }
  }

  /** Every series of `name`. */
  series(name) {
    return [...(this.#byName.get(name)?.values() ?? [])];
  }
}

/** `expr` (a string or a promql.mjs tree) at time `t`: { scalar } or { vector: [{ labels, value }] }. */
export function evaluate(expr, store, t) {
  const node = typeof expr === 'string' ? parsePromql(expr) : expr;
  return evaluateNode(node, store, t);
}

function evaluateNode(node, store, t) {
  switch (node.type) {
    case 'number':
      return { scalar: node.value };
    case 'selector':
      if (node.range !== null) throw new Error('a range selector outside a function');
      return { vector: instant(node, store, t) };
    case 'unary':
      return mapValues(evaluateNode(node.expr, store, t), (v) => (node.op === '-' ? -v : v));
    case 'call':
      return call(node, store, t);
    case 'aggregate':
      return { vector: aggregate(node, vectorOf(evaluateNode(node.expr, store, t), node.op)) };
    case 'binary':
      return binary(node, evaluateNode(node.left, store, t), evaluateNode(node.right, store, t));
    default:
      throw new Error(`${node.type} is not evaluated here`);
  }
}

const matches = (labels, matchers) =>
  matchers.every(({ label, op, value }) => {
    const actual = labels[label] ?? '';
    if (op === '=') return actual === value;
    if (op === '!=') return actual !== value;
    const re = new RegExp(`^(?:${value})$`);
    return op === '=~' ? re.test(actual) : !re.test(actual);
  });

function instant(selector, store, t) {
  const out = [];
  for (const { labels, points } of store.series(selector.name)) {
    if (!matches(labels, selector.matchers)) continue;
    const last = lastAtOrBefore(points, t);
    if (last && t - last[0] <= LOOKBACK_SECONDS) out.push({ labels, value: last[1] });
  }
  return out;
}

function lastAtOrBefore(points, t) {
  for (let i = points.length - 1; i >= 0; i--) if (points[i][0] <= t) return points[i];
  return undefined;
}

function windowed(selector, store, t) {
  return store
    .series(selector.name)
    .filter(({ labels }) => matches(labels, selector.matchers))
    .map(({ labels, points }) => ({ labels, points: points.filter(([pt]) => pt > t - selector.range && pt <= t) }));
}

/** A counter's rise over `points`, resets included (a drop means the counter started again from 0). */
function rise(points) {
  let total = 0;
  for (let i = 1; i < points.length; i++) {
    const [, before] = points[i - 1];
    const [, now] = points[i];
    total += now >= before ? now - before : now;
  }
  return total;
}

/**
 * Prometheus's extrapolatedRate (promql/functions.go): the change over the points, extrapolated to
 * the window's edges when the series reaches them (a sample within 1.1 average intervals), else by
 * half an interval, and for a counter never below zero; a rate divides by the window.
 */
function extrapolated(points, t, range, isCounter, isRate) {
  const [firstT, firstV] = points[0];
  const [lastT, lastV] = points[points.length - 1];
  const change = isCounter ? rise(points) : lastV - firstV;
  const sampled = lastT - firstT;
  const average = sampled / (points.length - 1);
  const threshold = average * 1.1;
  let toStart = firstT - (t - range);
  let toEnd = t - lastT;
  if (toStart >= threshold) toStart = average / 2;
  if (isCounter && change > 0 && firstV >= 0) toStart = Math.min(toStart, sampled * (firstV / change));
  if (toEnd >= threshold) toEnd = average / 2;
  const factor = (sampled + toStart + toEnd) / sampled;
  return (change * factor) / (isRate ? range : 1);
}

const OVER_TIME = {
  avg_over_time: (vs) => vs.reduce((a, b) => a + b, 0) / vs.length,
  min_over_time: (vs) => Math.min(...vs),
  max_over_time: (vs) => Math.max(...vs),
  sum_over_time: (vs) => vs.reduce((a, b) => a + b, 0),
  last_over_time: (vs) => vs[vs.length - 1],
};

function call(node, store, t) {
  const { fn, args } = node;
  if (fn === 'histogram_quantile') return { vector: histogramQuantile(args[0].value, vectorOf(evaluateNode(args[1], store, t), fn)) };
  if (fn === 'vector') return { vector: [{ labels: {}, value: args[0].value }] };
  if (fn in OVER_TIME || ['rate', 'irate', 'increase', 'delta', 'deriv'].includes(fn)) {
    const range = args[0].range;
    const out = [];
    for (const { labels, points } of windowed(args[0], store, t)) {
      if (fn in OVER_TIME) {
        if (points.length > 0) out.push({ labels, value: OVER_TIME[fn](points.map(([, v]) => v)) });
        continue;
      }
      if (points.length < 2) continue;
      const first = points[0];
      const last = points[points.length - 1];
      let value;
      if (fn === 'irate') {
        const before = points[points.length - 2];
        value = rise([before, last]) / (last[0] - before[0]);
      } else if (fn === 'deriv') value = (last[1] - first[1]) / (last[0] - first[0]);
      else value = extrapolated(points, t, range, fn !== 'delta', fn === 'rate');
      out.push({ labels, value });
    }
    return { vector: out };
  }
  const vector = vectorOf(evaluateNode(args[0], store, t), fn);
  const [a, b] = args.slice(1).map((n) => n.value);
  const apply = { abs: Math.abs, ceil: Math.ceil, floor: Math.floor, round: Math.round, sqrt: Math.sqrt, clamp_min: (v) => Math.max(v, a), clamp_max: (v) => Math.min(v, a), clamp: (v) => Math.min(Math.max(v, a), b) }[fn];
  if (!apply) throw new Error(`${fn} is not evaluated here`);
  return { vector: vector.map(({ labels, value }) => ({ labels, value: apply(value) })) };
}

/** Prometheus's histogram_quantile over cumulative buckets grouped by every label but `le`. */
function histogramQuantile(q, vector) {
  const groups = new Map();
  for (const { labels, value } of vector) {
    if (labels.le === undefined) continue;
    const { le, ...rest } = labels;
    const key = labelKey(rest);
    if (!groups.has(key)) groups.set(key, { labels: rest, buckets: [] });
    groups.get(key).buckets.push({ upper: le === '+Inf' ? Infinity : Number(le), count: value });
  }
  const out = [];
  for (const { labels, buckets } of groups.values()) {
    buckets.sort((x, y) => x.upper - y.upper);
    const total = buckets[buckets.length - 1];
    if (buckets.length < 2 || total.upper !== Infinity || !(total.count > 0)) continue;
    const rank = q * total.count;
    const at = buckets.findIndex((b) => b.count >= rank);
    let value;
    if (at === buckets.length - 1) value = buckets[at - 1].upper;
    else {
      const start = at === 0 ? 0 : buckets[at - 1].upper;
      const below = at === 0 ? 0 : buckets[at - 1].count;
      const inBucket = buckets[at].count - below;
      value = inBucket > 0 ? start + ((buckets[at].upper - start) * (rank - below)) / inBucket : buckets[at].upper;
    }
    out.push({ labels, value });
  }
  return out;
}

function aggregate(node, vector) {
  const { op, by, without } = node;
  if (!['sum', 'min', 'max', 'avg', 'count'].includes(op)) throw new Error(`${op} is not evaluated here`);
  const groups = new Map();
  for (const { labels, value } of vector) {
    const kept = by ? pick(labels, by) : without ? omit(labels, without) : {};
    const key = labelKey(kept);
    if (!groups.has(key)) groups.set(key, { labels: kept, values: [] });
    groups.get(key).values.push(value);
  }
  const reduce = {
    sum: (vs) => vs.reduce((a, b) => a + b, 0),
    min: (vs) => Math.min(...vs),
    max: (vs) => Math.max(...vs),
    avg: (vs) => vs.reduce((a, b) => a + b, 0) / vs.length,
    count: (vs) => vs.length,
  }[op];
  return [...groups.values()].map(({ labels, values }) => ({ labels, value: reduce(values) }));
}

const COMPARISONS = { '==': (a, b) => a === b, '!=': (a, b) => a !== b, '>': (a, b) => a > b, '<': (a, b) => a < b, '>=': (a, b) => a >= b, '<=': (a, b) => a <= b };
const ARITHMETIC = { '+': (a, b) => a + b, '-': (a, b) => a - b, '*': (a, b) => a * b, '/': (a, b) => a / b, '%': (a, b) => a % b, '^': (a, b) => a ** b };

function binary(node, left, right) {
  const { op, bool } = node;
  const combine = (a, b) => {
    if (op in ARITHMETIC) return ARITHMETIC[op](a, b);
    const holds = COMPARISONS[op](a, b);
    return bool ? (holds ? 1 : 0) : holds ? a : undefined;
  };
  if ('scalar' in left && 'scalar' in right) return { scalar: combine(left.scalar, right.scalar) };
  if ('scalar' in right) return { vector: keepDefined(left.vector.map(({ labels, value }) => ({ labels, value: combine(value, right.scalar) }))) };
  if ('scalar' in left) {
    // A comparison keeps the vector's sample: its value, not the scalar's.
    const keep = (value) => (op in COMPARISONS && !bool ? (COMPARISONS[op](left.scalar, value) ? value : undefined) : combine(left.scalar, value));
    return { vector: keepDefined(right.vector.map(({ labels, value }) => ({ labels, value: keep(value) }))) };
  }
  if (node.group) throw new Error('group_left / group_right are not evaluated here');
  const signature = (labels) => labelKey(node.on ? pick(labels, node.on) : omit(labels, node.ignoring ?? []));
  const rightBy = new Map(right.vector.map((s) => [signature(s.labels), s]));
  if (op === 'and') return { vector: left.vector.filter((s) => rightBy.has(signature(s.labels))) };
  if (op === 'unless') return { vector: left.vector.filter((s) => !rightBy.has(signature(s.labels))) };
  if (op === 'or') {
    const leftKeys = new Set(left.vector.map((s) => signature(s.labels)));
    return { vector: [...left.vector, ...right.vector.filter((s) => !leftKeys.has(signature(s.labels)))] };
  }
  const out = [];
  for (const l of left.vector) {
    const r = rightBy.get(signature(l.labels));
    if (!r) continue;
    const labels = node.on ? pick(l.labels, node.on) : omit(l.labels, node.ignoring ?? []);
    out.push({ labels, value: combine(l.value, r.value) });
  }
  return { vector: keepDefined(out) };
}

function vectorOf(result, where) {
  if (!('vector' in result)) throw new Error(`${where} needs a vector`);
  return result.vector;
}

const mapValues = (result, f) => ('scalar' in result ? { scalar: f(result.scalar) } : { vector: result.vector.map(({ labels, value }) => ({ labels, value: f(value) })) });
const keepDefined = (vector) => vector.filter((s) => s.value !== undefined);
const pick = (labels, names) => Object.fromEntries(names.filter((n) => labels[n] !== undefined).map((n) => [n, labels[n]]));
const omit = (labels, names) => Object.fromEntries(Object.entries(labels).filter(([n]) => !names.includes(n)));

/** A series' identity: its labels, sorted. */
export function labelKey(labels) {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join('\u0000');
}
