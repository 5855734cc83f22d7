/**
 * The Grafana dashboard (deploy/grafana/switchyard.json) and the alert rules
 * (deploy/kubernetes/prometheusrule.yaml) against the gateway they watch
 * (issue 26), so neither can rot: every expression is parsed by Prometheus's
 * own grammar (@prometheus-io/lezer-promql, through tools/dashboard/promql.mjs)
 * after Grafana's variables are expanded, and every metric name, label
 * matcher (and its value), `by` / `without` / `on` / `ignoring` label, legend
 * and annotation label is checked against what a real gateway serves on
 * /metrics after real traffic: chats, streams, embeddings, a retry, a
 * fallback, a failure, a 401 and the health routes, in two rounds with a
 * scrape after each. Each panel's queries are then evaluated over those two
 * scrapes (tools/dashboard/evaluate.mjs) and must show data. Also: the
 * dashboard has the shape Grafana imports, the rule file the shape the
 * Prometheus Operator reads, and each runbook link reaches a heading.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluate, SeriesStore } from '../tools/dashboard/evaluate.mjs';
import {
  allValues,
  expand,
  panelQueries,
  parseLabelValues,
  parsePromql,
  rangeVariables,
  readDashboard,
  readRules,
  ruleQueries,
  scrapeSamples,
  type Node,
  type Sample,
  type Selector,
} from '../tools/dashboard/promql.mjs';
import { UPSTREAM_KEY, useGateway } from './support/gateway.js';
import { startReplica, type Replica } from './support/replica-simulator.js';
import { anchors } from './support/markdown.js';

const ROOT = join(import.meta.dirname, '..');
const dashboard = readDashboard();
const rules = readRules();
const allRules = rules.spec.groups.flatMap((g) => g.rules);

/** Labels Prometheus itself puts on every series it scrapes, whatever the scrape config. */
const TARGET_LABELS = ['instance', 'job'];
/** Grafana's range variables for a 15 s scrape interval (the ServiceMonitor's). */
const RANGES = rangeVariables(15);

/** What the gateway serves: metric name → label → the values seen. */
type Served = Map<string, Map<string, Set<string>>>;

function servedOf(samples: readonly Sample[]): Served {
  const served: Served = new Map();
  for (const { name, labels } of samples) {
    const byLabel = served.get(name) ?? new Map<string, Set<string>>();
    served.set(name, byLabel);
    for (const [label, value] of Object.entries(labels)) {
      const values = byLabel.get(label) ?? new Set<string>();
      byLabel.set(label, values);
      values.add(value);
    }
  }
  return served;
}

/** A regex matcher that is a plain list of values (`a|b|c`): its values; anything else: null. */
const literalAlternatives = (regex: string): string[] | null => (/^[\w:/.-]+(\|[\w:/.-]+)*$/.test(regex) ? regex.split('|') : null);

/**
 * The labels `node`'s result carries (null for a scalar), adding to `problems` every name the
 * gateway does not serve: a metric, a label of a selector or grouping, a matcher's value.
 */
function labelsOf(node: Node, served: Served, problems: string[]): Set<string> | null {
  const need = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };
  switch (node.type) {
    case 'number':
    case 'string':
      return null;
    case 'selector':
      return selectorLabels(node, served, problems);
    case 'unary':
      return labelsOf(node.expr, served, problems);
    case 'call': {
      const args = node.args.map((a) => labelsOf(a, served, problems));
      if (node.fn === 'vector') return new Set();
      const vector = args.find((a) => a !== null) ?? new Set<string>();
      if (node.fn !== 'histogram_quantile') return vector;
      need(vector.has('le'), `histogram_quantile over a vector without le (${[...vector].join(', ')}): sum by (le, …) of a _bucket series`);
      return new Set([...vector].filter((l) => l !== 'le'));
    }
    case 'aggregate': {
      if (node.param) labelsOf(node.param, served, problems);
      const inner = labelsOf(node.expr, served, problems) ?? new Set<string>();
      const grouping = node.by ?? node.without ?? [];
      for (const label of grouping) need(inner.has(label), `${node.op} ${node.by ? 'by' : 'without'} (${label}): not a label of its argument (${[...inner].join(', ')})`);
      if (node.by) return new Set(node.by);
      if (node.without) return new Set([...inner].filter((l) => !grouping.includes(l)));
      return ['topk', 'bottomk'].includes(node.op) ? inner : new Set();
    }
    case 'binary': {
      const left = labelsOf(node.left, served, problems);
      const right = labelsOf(node.right, served, problems);
      if (left === null || right === null) return left ?? right;
      for (const label of node.on ?? []) need(left.has(label) && right.has(label), `on (${label}): not a label of both sides`);
      for (const label of node.ignoring ?? []) need(left.has(label) || right.has(label), `ignoring (${label}): a label of neither side`);
      for (const label of node.group?.labels ?? []) need((node.group?.side === 'left' ? right : left).has(label), `group_${node.group?.side} (${label}): not a label of the "one" side`);
      const setOp = ['and', 'or', 'unless'].includes(node.op);
      if (!setOp && !node.on && !node.ignoring) {
        // One-to-one on every label: two sides with different labels never match, and the panel is empty.
        need([...left].sort().join() === [...right].sort().join(), `${node.op} between sides with different labels (${[...left].join(', ')}) and (${[...right].join(', ')}): add on (…) or aggregate both alike`);
      }
      if (node.op === 'or') return new Set([...left, ...right]);
      if (setOp || !node.on) return new Set([...left].filter((l) => !(node.ignoring ?? []).includes(l)));
      return new Set([...node.on, ...(node.group?.labels ?? [])]);
    }
  }
}

function selectorLabels(node: Selector, served: Served, problems: string[]): Set<string> {
  const metric = served.get(node.name);
  if (!metric) {
    problems.push(`${node.name}: no such metric on /metrics`);
    // Any label the gateway serves, so that one wrong name is one problem.
    return new Set([...[...served.values()].flatMap((m) => [...m.keys()]), ...TARGET_LABELS]);
  }
  for (const { label, op, value } of node.matchers) {
    if (TARGET_LABELS.includes(label)) continue;
    const values = metric.get(label);
    if (!values) {
      problems.push(`${node.name}: no label "${label}" (it has ${[...metric.keys()].join(', ') || 'none'})`);
      continue;
    }
    const wanted = op === '=' || op === '!=' ? [value] : literalAlternatives(value);
    for (const v of wanted ?? []) if (!values.has(v)) problems.push(`${node.name}{${label}${op}"${value}"}: "${v}" is not a value it serves (${[...values].join(', ')})`);
  }
  return new Set([...metric.keys(), ...TARGET_LABELS]);
}

/** The problems of one expression (after Grafana's variables are expanded), and the labels its result carries. */
function check(expr: string, served: Served): { problems: string[]; labels: Set<string> } {
  const problems: string[] = [];
  const labels = labelsOf(parsePromql(expr), served, problems) ?? new Set<string>();
  return { problems: problems.map((p) => `${p} in: ${expr}`), labels };
}

/** The metric names of an expression's selectors. */
function metricsOf(node: Node): string[] {
  if (node.type === 'selector') return [node.name];
  const children = Object.values(node).flatMap((v: unknown) => (Array.isArray(v) ? v : [v]));
  return children.filter((c): c is Node => typeof c === 'object' && c !== null && 'type' in c).flatMap(metricsOf);
}

/** Every `{{x}}` or `{{ $labels.x }}` of a legend or an annotation. */
const templateLabels = (text: string): string[] => [...text.matchAll(/\{\{\s*(?:\$labels\.)?([a-zA-Z_]\w*)\s*\}\}/g)].map((m) => m[1] as string);

const dashboardExprs = () => panelQueries(dashboard).map((q) => ({ ...q, where: `panel "${q.panel.title}" ${q.refId}`, expanded: expand(q.expr, { ...allValues(dashboard), ...RANGES }) }));

// ───────────────────────── a real gateway, real traffic ─────────────────────────

describe('against a real gateway after real traffic', () => {
  /** Two simulated vLLM / SGLang replicas of the alias `llama`, for the inference-aware row. */
  const replicas: Replica[] = [];
  afterAll(async () => {
    for (const r of replicas.splice(0)) await r.close();
  });
  const { gw, upstream } = useGateway({
    gateway: async (up) => {
      for (const engine of ['vllm', 'sglang'] as const) replicas.push(await startReplica({ engine, maxRunning: 1, prefillMsPerBlock: 0.1, decodeMsPerToken: 0.1, outputTokens: 2 }));
      const [a, b] = replicas as [Replica, Replica];
      return {
        yaml: `
model_list:
  - model_name: llama
    params: { model: openai/meta-llama/Llama-3.1-8B-Instruct, api_base: "${a.apiBase}", server_metrics: vllm }
    model_info: { id: llama-a }
  - model_name: llama
    params: { model: openai/meta-llama/Llama-3.1-8B-Instruct, api_base: "${b.apiBase}", server_metrics: sglang }
    model_info: { id: llama-b }
  - model_name: chat
    params: { model: openai/fake-model, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
    model_info: { id: east }
  - model_name: chat
    params: { model: openai/fake-model, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
    model_info: { id: west }
  - model_name: backup
    # rpm and tpm far above the traffic: the limit series (issue 37) exist and move.
    params: { model: openai/fake-model, api_base: ${up.url}, api_key: ${UPSTREAM_KEY}, rpm: 100000, tpm: 10000000 }
  - model_name: embed
    params: { model: openai/fake-embed, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
router_settings:
  routing_strategy: inference-aware
  inference_routing: { metrics_interval_ms: 100 }
  num_retries: 2
  allowed_fails: 1000
  fallbacks: [{ chat: [backup] }]
`,
      };
    },
  });
  const store = new SeriesStore();
  let served: Served = new Map();
  let lastScrape = 0;
  let bothScrapes = '';

  async function chat(): Promise<Response> {
    const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'count my tokens' }] }) });
    await res.arrayBuffer();
    return res;
  }

  /** One of everything the dashboard shows. */
  async function traffic(): Promise<void> {
    const client = gw.client();
    expect((await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hello there' }] })).usage?.total_tokens).toBe(5);
    const stream = await client.chat.completions.create({ model: 'chat', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'stream it' }] });
    for await (const _chunk of stream);
    expect((await client.embeddings.create({ model: 'embed', input: 'embed me' })).data).toHaveLength(1);
    // A retry: the first deployment answers 500, the other 200.
    upstream.behaveOnce({ kind: 'status', status: 500 });
    const retried = await chat();
    expect([retried.status, retried.headers.get('x-switchyard-attempts')]).toEqual([200, '2']);
    // A fallback: both deployments of chat answer 500, backup 200.
    for (let i = 0; i < 2; i++) upstream.behaveOnce({ kind: 'status', status: 500 });
    const fellBack = await chat();
    expect([fellBack.status, fellBack.headers.get('x-switchyard-fallback')]).toEqual([200, 'backup']);
    // A failure: every attempt (east, west, backup) answers 500: a 502 upstream_error.
    for (let i = 0; i < 3; i++) upstream.behaveOnce({ kind: 'status', status: 500 });
    expect((await chat()).status).toBe(502);
    // A 401, and the health routes that record the checks.
    expect((await gw.fetch('/v1/chat/completions', { method: 'POST', auth: false, body: '{}' })).status).toBe(401);
    for (const path of ['/ready', '/health']) expect((await gw.fetch(path, { auth: false })).status).toBe(200);
    await inferenceTraffic();
  }

  /** The inference-aware row: a session's two turns (a load pick, then a prefix one), a shed request, failed scrapes. */
  async function inferenceTraffic(): Promise<void> {
    const fleet = gw.gateway.context.inference;
    /** A good scrape of each replica that began after now (the second good one from now: scrapes never overlap). */
    const scraped = async () => {
      for (const id of ['llama-a', 'llama-b']) {
        const scraper = fleet.scraperOf(id);
        if (scraper === null) throw new Error(`no scraper for ${id}`);
        const from = scraper.good;
        while (scraper.good < from + 2) await scraper.next();
      }
    };
    await scraped();
    const llama = (messages: unknown[], headers: Record<string, string> = {}) => gw.fetch('/v1/chat/completions', { method: 'POST', headers, body: JSON.stringify({ model: 'llama', messages }) });
    const turn = [{ role: 'system', content: `You answer from the documents given. ${'Cite each one. '.repeat(20)}${Date.now()}` }, { role: 'user', content: 'first' }];
    for (let i = 0; i < 2; i++) expect((await llama(turn)).status).toBe(200);
    // Every replica saturated (one running, five waiting each): a sheddable request is shed.
    for (const r of replicas) r.pause();
    const loads = replicas.flatMap((r) => Array.from({ length: 6 }, () => fetch(`${r.apiBase}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'load' }] }) }).then((res) => res.arrayBuffer())));
    for (const r of replicas) await r.waitFor(() => r.waiting() === 5);
    await scraped();
    expect((await llama([{ role: 'user', content: 'may wait' }], { 'x-switchyard-priority': 'sheddable' })).status).toBe(429);
    for (const r of replicas) r.resume();
    await Promise.all(loads);
    // A replica's /metrics down for a scrape.
    const b = replicas[1] as Replica;
    const scraperB = fleet.scraperOf('llama-b');
    const failures = scraperB?.failures ?? 0;
    b.failMetrics(503);
    while ((scraperB?.failures ?? 0) <= failures) await scraperB?.next();
    b.failMetrics(null);
    expect(fleet.scraperOf('llama-b')?.failures).toBeGreaterThan(failures);
  }

  async function scrape(): Promise<Sample[]> {
    const res = await gw.fetch('/metrics', { auth: false });
    expect(res.status).toBe(200);
    const samples = await scrapeSamples(await res.text());
    lastScrape = Date.now() / 1000;
    store.add(lastScrape, samples, { instance: `127.0.0.1:${gw.port}`, job: 'switchyard' });
    return samples;
  }

  beforeAll(async () => {
    await traffic();
    const first = await scrape();
    const t1 = lastScrape;
    await traffic();
    served = servedOf([...first, ...(await scrape())]);
    // A range that holds both scrapes, for the rates of the evaluation.
    bothScrapes = `${Math.ceil(lastScrape - t1) + 1}s`;
  }, 60_000);

  it('the traffic gave every request, routing and health family samples, with the label values the expressions name', () => {
    for (const name of ['switchyard_requests_total', 'switchyard_time_to_first_token_seconds_bucket', 'switchyard_tokens_total', 'switchyard_retries_total', 'switchyard_fallbacks_total', 'switchyard_upstream_errors_total', 'switchyard_health_check_status', 'switchyard_deployment_state']) {
      expect(served.has(name), name).toBe(true);
    }
    expect([...(served.get('switchyard_requests_total')?.get('status_class') ?? [])].sort()).toEqual(['2xx', '4xx', '5xx']);
    expect(served.get('switchyard_request_duration_seconds_bucket')?.has('le')).toBe(true);
  });

  it('every dashboard query parses, and names only metrics, labels and values the gateway serves; every legend label is on its result', () => {
    const problems: string[] = [];
    for (const q of dashboardExprs()) {
      const { problems: found, labels } = check(q.expanded, served);
      problems.push(...found.map((p) => `${q.where}: ${p}`));
      for (const label of templateLabels(q.legendFormat)) if (!labels.has(label)) problems.push(`${q.where}: legend {{${label}}} is not a label of the result (${[...labels].join(', ')})`);
    }
    expect(problems).toEqual([]);
  });

  it("the template variables' label_values queries name a served metric and label", () => {
    const queries = dashboard.templating.list.filter((v) => v.type === 'query');
    expect(queries.length).toBeGreaterThan(0);
    for (const v of queries) {
      const query = typeof v.query === 'object' ? v.query.query : String(v.query);
      const { selector, label } = parseLabelValues(query);
      const problems: string[] = [];
      const labels = labelsOf(selector, served, problems);
      expect(problems, v.name).toEqual([]);
      expect(labels?.has(label), `${v.name}: label_values(…, ${label})`).toBe(true);
      expect(v.definition, `${v.name}: definition and query agree`).toBe(query);
    }
  });

  it('every alert expression parses, and names only what the gateway serves; every label its annotations use is on its result', () => {
    const problems: string[] = [];
    for (const rule of allRules) {
      const { problems: found, labels } = check(rule.expr, served);
      problems.push(...found.map((p) => `${rule.alert}: ${p}`));
      for (const text of Object.values(rule.annotations ?? {})) {
        for (const label of templateLabels(text)) if (!labels.has(label) && label !== 'value') problems.push(`${rule.alert}: annotation label ${label} is not on the result (${[...labels].join(', ')})`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('every panel shows data: each query, evaluated over the two scrapes, gives a series with a number', () => {
    const empty: string[] = [];
    for (const q of dashboardExprs()) {
      const expr = expand(q.expr, { ...allValues(dashboard), __rate_interval: bothScrapes, __interval: bothScrapes });
      const result = evaluate(expr, store, lastScrape);
      const values = 'scalar' in result ? [result.scalar] : result.vector.map((s) => s.value);
      if (!values.some(Number.isFinite)) empty.push(`${q.where}: ${expr}`);
    }
    expect(empty).toEqual([]);
  });

  describe('the check fails when an expression rots', () => {
    const problemsOf = (expr: string) => check(expr, served).problems;
    const base = 'sum by (model, status) (rate(switchyard_requests_total{model=~".*", status_class="5xx"}[5m]))';

    it('passes the expression as it is', () => expect(problemsOf(base)).toEqual([]));
    it('a typo in a metric name', () => expect(problemsOf(base.replace('switchyard_requests_total', 'switchyard_request_total'))).toEqual([expect.stringContaining('switchyard_request_total: no such metric')]));
    it('a label the metric does not have, in a matcher and in by', () => {
      expect(problemsOf(base.replace('model=~', 'alias=~'))).toEqual([expect.stringContaining('no label "alias"')]);
      expect(problemsOf(base.replace('by (model,', 'by (alias,'))).toEqual([expect.stringContaining('by (alias): not a label')]);
    });
    it('a value the gateway never sends', () => expect(problemsOf(base.replace('"5xx"', '"5XX"'))).toEqual([expect.stringContaining('"5XX" is not a value it serves')]));
    it('a histogram_quantile that lost its le, and sides that cannot match', () => {
      expect(problemsOf('histogram_quantile(0.99, sum by (model) (rate(switchyard_request_duration_seconds_bucket[5m])))')).toEqual([expect.stringContaining('without le')]);
      expect(problemsOf('sum by (model) (rate(switchyard_requests_total[5m])) / sum by (route) (rate(switchyard_requests_total[5m]))')).toEqual([expect.stringContaining('different labels')]);
    });
    it('a syntax error throws', () => {
      expect(() => problemsOf('sum(rate(switchyard_requests_total[5m])')).toThrow(/syntax error/);
      expect(() => problemsOf('rate(switchyard_requests_total)')).toThrow(/range selector/);
    });
  });
});

// ───────────────────────── the evaluator the picture is drawn with ─────────────────────────

describe("tools/dashboard/evaluate.mjs gives Prometheus's answers for the forms the dashboard uses", () => {
  const store = new SeriesStore();
  const sample = (name: string, labels: Record<string, string>, value: number): Sample => ({ name, labels, value });
  // A counter that restarts (a pod's restart) between 10 s and 20 s, and a histogram of 20 observations.
  store.add(0, [sample('c_total', { model: 'a' }, 10), sample('c_total', { model: 'b' }, 0)]);
  store.add(10, [sample('c_total', { model: 'a' }, 20), sample('c_total', { model: 'b' }, 10)]);
  store.add(20, [sample('c_total', { model: 'a' }, 5), sample('c_total', { model: 'b' }, 30)]);
  for (const [le, count] of [['1', 10], ['2', 20], ['+Inf', 20]] as const) store.add(20, [sample('h_bucket', { model: 'a', le }, count)]);
  const at = (expr: string) => {
    const result = evaluate(expr, store, 20);
    return 'scalar' in result ? result.scalar : Object.fromEntries(result.vector.map((s) => [s.labels.model ?? '', s.value]));
  };

  it("rate and increase count a counter reset as a restart from 0, and extrapolate to the window as Prometheus does (a counter's not below zero)", () => {
    // a: 15 over 20 s, extrapolated by the 10 s to the window's start; b starts at 0, so not before its first sample.
    expect(at('increase(c_total[30s])')).toEqual({ a: 22.5, b: 30 });
    expect(at('rate(c_total[30s])')).toEqual({ a: 0.75, b: 1 });
    // A window that starts long before the first sample: extrapolated by half an interval only.
    expect(at('increase(c_total[100s])')).toEqual({ a: 18.75, b: 30 });
  });

  it('histogram_quantile interpolates within the bucket, and answers the highest finite bound for the +Inf bucket', () => {
    expect(at('histogram_quantile(0.5, sum by (le, model) (h_bucket))')).toEqual({ a: 1 });
    expect(at('histogram_quantile(0.75, sum by (le, model) (h_bucket))')).toEqual({ a: 1.5 });
    store.add(20, [sample('h_bucket', { model: 'x', le: '1' }, 1), sample('h_bucket', { model: 'x', le: '+Inf' }, 10)]);
    expect(at('histogram_quantile(0.99, sum by (le, model) (h_bucket{model="x"}))')).toEqual({ x: 1 });
  });

  it('aggregates by label, matches one-to-one sides by their labels, and filters by comparison', () => {
    expect(at('sum(c_total)')).toEqual({ '': 35 });
    expect(at('c_total / on (model) sum by (model) (c_total)')).toEqual({ a: 1, b: 1 });
    expect(at('c_total > 10')).toEqual({ b: 30 });
    expect(at('max by (model) (c_total) == bool 5')).toEqual({ a: 1, b: 0 });
    expect(at('c_total and on (model) c_total{model="b"}')).toEqual({ b: 30 });
  });
});

// ───────────────────────── shapes ─────────────────────────

describe('deploy/grafana/switchyard.json is a dashboard Grafana imports', () => {
  const { panels } = dashboard;

  it('has a uid, a title, a schema version, a Prometheus datasource variable and an alias variable from label_values', () => {
    expect(dashboard).toMatchObject({ uid: expect.stringMatching(/^[\w-]{1,40}$/), title: expect.any(String), schemaVersion: expect.any(Number) });
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const vars = Object.fromEntries(dashboard.templating.list.map((v: { name: string }) => [v.name, v]));
    expect(vars.datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars.alias).toMatchObject({ type: 'query', datasource: { type: 'prometheus', uid: '${datasource}' }, query: { query: expect.stringMatching(/^label_values\(/) }, includeAll: true, multi: true });
  });

  it('every panel has a unique id, a type, a title and a place on the 24-column grid, and no two overlap', () => {
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size, 'unique ids').toBe(ids.length);
    for (const p of panels) {
      expect(Number.isInteger(p.id) && p.id > 0, `id of "${p.title}"`).toBe(true);
      expect(['row', 'timeseries', 'stat'], `type of "${p.title}"`).toContain(p.type);
      expect(typeof p.title === 'string' && p.title.length > 0).toBe(true);
      const { x, y, w, h } = p.gridPos;
      expect([x, y, w, h].every(Number.isInteger) && x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24, `gridPos of "${p.title}"`).toBe(true);
    }
    for (const [i, a] of panels.entries()) {
      for (const b of panels.slice(i + 1)) {
        const apart = a.gridPos.x + a.gridPos.w <= b.gridPos.x || b.gridPos.x + b.gridPos.w <= a.gridPos.x || a.gridPos.y + a.gridPos.h <= b.gridPos.y || b.gridPos.y + b.gridPos.h <= a.gridPos.y;
        expect(apart, `"${a.title}" and "${b.title}" overlap`).toBe(true);
      }
    }
  });

  it('every panel but a row queries ${datasource} with targets of unique refIds, each with an expression', () => {
    for (const p of panels.filter((p) => p.type !== 'row')) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      const targets = p.targets ?? [];
      expect(targets.length, p.title).toBeGreaterThan(0);
      expect(new Set(targets.map((t) => t.refId)).size, `${p.title}: refIds`).toBe(targets.length);
      for (const t of targets) expect(t, p.title).toMatchObject({ datasource: { type: 'prometheus', uid: '${datasource}' }, refId: expect.any(String), expr: expect.any(String) });
      expect(typeof p.fieldConfig?.defaults?.unit, `${p.title}: unit`).toBe('string');
    }
  });

  it('shows what issue 26 asks for: every family below is in some panel', () => {
    const used = new Set(dashboardExprs().flatMap((q) => metricsOf(parsePromql(q.expanded))));
    const asked = [
      'switchyard_requests_total',
      'switchyard_upstream_errors_total',
      'switchyard_request_duration_seconds_bucket',
      'switchyard_time_to_first_token_seconds_bucket',
      'switchyard_tokens_total',
      'switchyard_requests_in_flight',
      'switchyard_streams_open',
      'switchyard_deployment_state',
      'switchyard_retries_total',
      'switchyard_fallbacks_total',
      'switchyard_cooldowns_total',
      'switchyard_workers',
      'switchyard_worker_restarts_total',
      'switchyard_nodejs_eventloop_lag_p99_seconds',
      'switchyard_health_check_status',
    ];
    expect(asked.filter((name) => !used.has(name))).toEqual([]);
  });
});

describe('deploy/kubernetes/prometheusrule.yaml is a PrometheusRule', () => {
  const operations = anchors(readFileSync(join(ROOT, 'docs/OPERATIONS.md'), 'utf8'));

  it("has the Prometheus Operator's apiVersion, kind, a name and the app's labels, and named groups of rules", () => {
    expect(rules).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'switchyard', labels: { 'app.kubernetes.io/name': 'switchyard' } } });
    for (const g of rules.spec.groups) expect(g).toMatchObject({ name: expect.any(String), rules: expect.any(Array) });
  });

  it('every rule is an alert with an expression, a for:, a severity, a summary, a description and a runbook link to a heading of docs/OPERATIONS.md', () => {
    const names = allRules.map((r) => r.alert);
    expect(new Set(names).size, 'unique alert names').toBe(names.length);
    for (const r of allRules) {
      expect(r, String(r.alert)).toMatchObject({ alert: expect.stringMatching(/^Switchyard[A-Z]\w+$/), expr: expect.any(String), for: expect.stringMatching(/^\d+[smh]$/) });
      expect(['critical', 'warning'], `${r.alert}: severity`).toContain(r.labels?.severity);
      expect(r.annotations, String(r.alert)).toMatchObject({ summary: expect.any(String), description: expect.any(String), runbook_url: expect.stringMatching(/^docs\/OPERATIONS\.md#/) });
      const anchor = String(r.annotations?.runbook_url).split('#')[1] as string;
      expect(operations.has(anchor), `${r.alert}: docs/OPERATIONS.md#${anchor}`).toBe(true);
    }
  });

  it('alerts on what issue 26 asks for: the error ratio, p99 latency, an alias all cooling, readiness, worker restarts, event-loop delay; and issue 37: shared state degraded', () => {
    expect(ruleQueries(rules).map((r) => r.alert)).toEqual(['SwitchyardErrorRatio', 'SwitchyardLatencyP99', 'SwitchyardAliasCooling', 'SwitchyardNotReady', 'SwitchyardWorkerRestarts', 'SwitchyardEventLoopDelay', 'SwitchyardSharedStateDegraded']);
  });
});
