// The PromQL of the Grafana dashboard and the PrometheusRule (issue 26), read one way for the test
// that keeps them true to the gateway's /metrics (test/dashboard.test.ts) and for the renderer that
// draws the dashboard from a local run (tools/render-dashboard.mjs):
//   - where the expressions are: every target of every panel, the template variables' queries,
//     every rule's `expr`;
//   - Grafana's variables expanded (`$alias`, `${alias}`, `$__rate_interval`), as Grafana does
//     before it sends a query;
//   - each expression parsed by Prometheus's own grammar (@prometheus-io/lezer-promql, the parser
//     of Prometheus's web UI) into a small tree; a syntax error, or a form this module does not
//     know, throws with the expression and the place;
//   - a scrape's exposition text as flat samples (histograms as their _bucket{le}, _sum and _count
//     series), read by prom2javascript as test/metrics.test.ts reads it.
// Types for TypeScript callers: promql.d.mts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { getMetricsFromIterator } from 'prom2javascript';
import { parse as parseYaml } from 'yaml';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DASHBOARD_FILE = 'deploy/grafana/switchyard.json';
export const RULES_FILE = 'deploy/kubernetes/prometheusrule.yaml';

/** deploy/grafana/switchyard.json, parsed. */
export const readDashboard = () => JSON.parse(readFileSync(ROOT + DASHBOARD_FILE, 'utf8'));
/** deploy/kubernetes/prometheusrule.yaml, parsed. */
export const readRules = () => parseYaml(readFileSync(ROOT + RULES_FILE, 'utf8'));

/** Every query of the dashboard's panels (rows hold none): the panel, its target's refId, expr and legend. */
export function panelQueries(dashboard) {
  return dashboard.panels
    .filter((panel) => panel.type !== 'row')
    .flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, refId: target.refId, expr: target.expr, legendFormat: target.legendFormat ?? '' })));
}

/** Every alerting rule of the PrometheusRule: its name and expr. */
export function ruleQueries(rules) {
  return rules.spec.groups.flatMap((group) => group.rules.map((rule) => ({ alert: rule.alert, expr: rule.expr })));
}

/** Grafana's range variables as Grafana computes them for a scrape interval (seconds): `$__rate_interval` is 4 scrapes at least. */
export function rangeVariables(scrapeSeconds, intervalSeconds = scrapeSeconds) {
  return { __rate_interval: `${Math.max(4 * scrapeSeconds, intervalSeconds + scrapeSeconds)}s`, __interval: `${intervalSeconds}s` };
}

/**
 * The values a dashboard's own variables take when "All" is chosen (a query variable's `allValue`, `.*`
 * by default; a datasource variable its own name), so that an expression can be expanded as Grafana would.
 */
export function allValues(dashboard) {
  return Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v.type === 'datasource' ? v.name : (v.allValue ?? '.*')]));
}

/** `expr` with every Grafana variable (`$name`, `${name}`, `[[name]]`) replaced from `values`; an unknown one throws. */
export function expand(expr, values) {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)/g, (_whole, braced, bracketed, bare) => {
    const name = braced ?? bracketed ?? bare;
    if (!(name in values)) throw new Error(`unknown variable $${name} in: ${expr}`);
    return values[name];
  });
}

/** A Grafana `label_values(<selector>, <label>)` variable query: its selector, parsed, and its label. */
export function parseLabelValues(query) {
  const match = /^\s*label_values\(\s*(.+),\s*([a-zA-Z_]\w*)\s*\)\s*$/.exec(query);
  if (!match) throw new Error(`not a label_values(<selector>, <label>) query: ${query}`);
  const selector = parsePromql(match[1]);
  if (selector.type !== 'selector' || selector.range !== null) throw new Error(`label_values needs an instant selector: ${query}`);
  return { selector, label: match[2] };
}

// ───────────────────────── the tree ─────────────────────────

/** Functions from a range vector to an instant vector with the same labels. */
const RANGE_FUNCTIONS = new Set(['rate', 'irate', 'increase', 'delta', 'deriv', 'avg_over_time', 'min_over_time', 'max_over_time', 'sum_over_time', 'last_over_time']);
/** Functions of one instant vector that keep its labels. */
const VECTOR_FUNCTIONS = new Set(['abs', 'ceil', 'floor', 'round', 'sqrt', 'clamp', 'clamp_min', 'clamp_max']);
const MATCH_OPS = { EqlSingle: '=', Neq: '!=', EqlRegex: '=~', NeqRegex: '!~' };
const BINARY_OPS = new Set(['+', '-', '*', '/', '%', '^', '==', '!=', '>', '<', '>=', '<=', 'and', 'or', 'unless']);

/**
 * `expr` parsed by Prometheus's grammar into a tree of
 *   { type: 'number', value } | { type: 'string', value }
 *   { type: 'selector', name, matchers: [{ label, op, value }], range: seconds | null }
 *   { type: 'call', fn, args }
 *   { type: 'aggregate', op, by: labels | null, without: labels | null, param: node | null, expr }
 *   { type: 'binary', op, bool, on: labels | null, ignoring: labels | null, group: { side, labels } | null, left, right }
 *   { type: 'unary', op, expr }
 * (parentheses dropped). Throws on a syntax error and on a form outside this list (offsets, @, subqueries).
 */
export function parsePromql(expr) {
  const tree = parser.parse(expr);
  const where = (node) => `${JSON.stringify(expr.slice(node.from, node.to))} at ${node.from} in: ${expr}`;
  tree.iterate({
    enter(node) {
      if (node.type.isError) throw new Error(`PromQL syntax error ${where(node)}`);
    },
  });
  const text = (node) => expr.slice(node.from, node.to);
  const children = (node) => {
    const out = [];
    for (let child = node.firstChild; child; child = child.nextSibling) out.push(child);
    return out;
  };
  const child = (node, name) => children(node).find((c) => c.name === name) ?? null;
  const labels = (grouping) => children(grouping).filter((c) => c.name === 'LabelName').map(text);

  const build = (node) => {
    switch (node.name) {
      case 'PromQL':
      case 'ParenExpr':
        return build(children(node).find((c) => c.name !== '(' && c.name !== ')'));
      case 'NumberDurationLiteral':
        return { type: 'number', value: Number(text(node)) };
      case 'StringLiteral':
        return { type: 'string', value: stringValue(text(node)) };
      case 'VectorSelector':
        return selector(node, null);
      case 'MatrixSelector':
        return selector(child(node, 'VectorSelector'), seconds(text(child(node, 'DurationExpr'))));
      case 'FunctionCall': {
        const fn = text(child(node, 'FunctionIdentifier'));
        const args = children(child(node, 'FunctionCallBody')).filter((c) => c.name !== '(' && c.name !== ')' && c.name !== ',').map(build);
        return call(fn, args, node);
      }
      case 'AggregateExpr': {
        const modifier = child(node, 'AggregateModifier');
        const kind = modifier ? children(modifier)[0].name : null;
        const grouping = modifier ? labels(child(modifier, 'GroupingLabels')) : null;
        const args = children(child(node, 'FunctionCallBody')).filter((c) => c.name !== '(' && c.name !== ')' && c.name !== ',').map(build);
        const op = text(child(node, 'AggregateOp'));
        if (args.length !== (['topk', 'bottomk', 'quantile'].includes(op) ? 2 : 1)) throw new Error(`${op} takes ${args.length} arguments ${where(node)}`);
        if (op === 'count_values') throw new Error(`count_values is not supported by tools/dashboard/promql.mjs ${where(node)}`);
        return { type: 'aggregate', op, by: kind === 'By' ? grouping : null, without: kind === 'Without' ? grouping : null, param: args.length === 2 ? args[0] : null, expr: args[args.length - 1] };
      }
      case 'BinaryExpr': {
        const parts = children(node);
        const [left, operator] = parts;
        const right = parts[parts.length - 1];
        const op = text(operator).toLowerCase();
        if (!BINARY_OPS.has(op)) throw new Error(`unknown operator ${op} ${where(node)}`);
        const matching = child(node, 'MatchingModifierClause');
        let on = null;
        let ignoring = null;
        let group = null;
        if (matching) {
          const parts = children(matching);
          const groupings = parts.filter((c) => c.name === 'GroupingLabels').map(labels);
          if (parts[0].name === 'On') on = groupings[0];
          else ignoring = groupings[0];
          const side = parts.find((c) => c.name === 'GroupLeft' || c.name === 'GroupRight');
          if (side) group = { side: side.name === 'GroupLeft' ? 'left' : 'right', labels: groupings[1] ?? [] };
        }
        return { type: 'binary', op, bool: child(node, 'BoolModifier') !== null, on, ignoring, group, left: build(left), right: build(right) };
      }
      case 'UnaryExpr':
        return { type: 'unary', op: text(child(node, 'UnaryOp')), expr: build(children(node)[1]) };
      default:
        throw new Error(`${node.name} is not supported by tools/dashboard/promql.mjs ${where(node)}`);
    }
  };

  const selector = (node, range) => {
    const name = child(node, 'Identifier');
    const matchers = [];
    const list = child(node, 'LabelMatchers');
    for (const m of list ? children(list).filter((c) => c.name === 'UnquotedLabelMatcher') : []) {
      const op = MATCH_OPS[children(child(m, 'MatchOp'))[0].name];
      matchers.push({ label: text(child(m, 'LabelName')), op, value: stringValue(text(child(m, 'StringLiteral'))) });
    }
    if (list && children(list).some((c) => c.name === 'QuotedLabelMatcher' || c.name === 'QuotedLabelName')) throw new Error(`quoted label names are not supported ${where(node)}`);
    const named = matchers.find((m) => m.label === '__name__' && m.op === '=');
    if (!name && !named) throw new Error(`a selector without a metric name ${where(node)}`);
    return { type: 'selector', name: name ? text(name) : named.value, matchers: matchers.filter((m) => m !== named), range };
  };

  const call = (fn, args, node) => {
    const wants = (ok, why) => {
      if (!ok) throw new Error(`${fn}: ${why} ${where(node)}`);
    };
    if (RANGE_FUNCTIONS.has(fn)) wants(args.length === 1 && args[0].type === 'selector' && args[0].range !== null, 'takes one range selector');
    else if (fn === 'histogram_quantile') wants(args.length === 2 && args[0].type === 'number', 'takes a quantile and a vector');
    else if (VECTOR_FUNCTIONS.has(fn)) wants(args.length >= 1 && args.slice(1).every((a) => a.type === 'number'), 'takes a vector (and numbers)');
    else if (fn === 'vector') wants(args.length === 1 && args[0].type === 'number', 'takes a number');
    else wants(false, 'is not supported by tools/dashboard/promql.mjs');
    return { type: 'call', fn, args };
  };

  return build(tree.topNode);
}

/** A PromQL duration (`5m`, `1h30m`, `250ms`, or plain seconds) in seconds. */
export function seconds(duration) {
  if (/^\d+(\.\d+)?$/.test(duration)) return Number(duration);
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800, y: 31_536_000 };
  let total = 0;
  let rest = duration;
  for (const [whole, n, u] of duration.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)) {
    total += Number(n) * unit[u];
    rest = rest.replace(whole, '');
  }
  if (rest !== '' || total === 0) throw new Error(`not a duration: ${duration}`);
  return total;
}

/** A PromQL string literal's value: "…" with Go's escapes, '…', or `…` (raw). */
function stringValue(literal) {
  const quote = literal[0];
  const body = literal.slice(1, -1);
  if (quote === '`') return body;
  if (quote === "'") return JSON.parse(`"${body.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`);
  return JSON.parse(literal);
}

// ───────────────────────── scrapes ─────────────────────────

/**
 * The samples of a /metrics answer: [{ name, labels, value }], a histogram as its `_bucket` (with `le`),
 * `_sum` and `_count` series, a summary as its quantiles, `_sum` and `_count`. A `NaN` sample (prom-client's
 * event-loop lag when no delay was sampled since the last scrape) is left out: the parser has no NaN.
 */
export async function scrapeSamples(text) {
  const lines = text.split('\n').filter((line) => !/^[^#].* (Nan|NaN)$/.test(line));
  const families = await getMetricsFromIterator(lines[Symbol.iterator]());
  const out = [];
  for (const [name, family] of Object.entries(families)) {
    for (const d of family.data) {
      if (family.type === 'histogram') {
        for (const [le, value] of Object.entries(d.buckets)) out.push({ name: `${name}_bucket`, labels: { ...d.labels, le }, value });
        out.push({ name: `${name}_count`, labels: d.labels, value: d.count });
        if (d.sum !== undefined) out.push({ name: `${name}_sum`, labels: d.labels, value: d.sum });
      } else if (family.type === 'summary') {
        for (const [quantile, value] of Object.entries(d.quantiles)) out.push({ name, labels: { ...d.labels, quantile }, value });
        if (d.count !== undefined) out.push({ name: `${name}_count`, labels: d.labels, value: d.count });
        if (d.sum !== undefined) out.push({ name: `${name}_sum`, labels: d.labels, value: d.sum });
      } else out.push({ name, labels: d.labels, value: d.value });
    }
  }
  return out;
}
