/**
 * Programmable fake OpenAI-compatible deployments for the routing tests: one
 * real HTTP server per deployment (so one can be closed, refused or slow on
 * its own), each following a script of steps, one per request, then its
 * default step. Every request is recorded: its method, path and key, its
 * body, whether it asked for a stream, and whether the gateway aborted it
 * before the answer was done.
 *
 * Each deployment takes its own key, `keyOf(name)` (`sk-key-of-<name>`, which
 * `deploymentYaml` configures), and refuses what api.openai.com refuses
 * before any step runs (issue 34, point 2): a method and path it does not
 * serve (`POST /v1/chat/completions`, `POST /v1/embeddings`, `GET
 * /v1/models`) is 404 `Invalid URL`, a missing or wrong key 401
 * `invalid_api_key`. So a retry or fallback that sends another deployment's
 * key, or a path typo, is refused where a test sees it: the record says
 * `refused`, and `withRouted` fails a test that leaves a refusal untaken.
 *
 * Node built-ins only. `startScriptedUpstream(['east', 'west'])`, point each
 * deployment's `api_base` at `up.at('east').url`, then
 * `up.at('east').script({ status: 500 }, { status: 429, retryAfter: '2' })`.
 *
 * For the quota tests (issue 37) each deployment counts what a provider bills: `calls()` are the
 * model calls it served, each with the `tokens` of the `usage` it answered (`usage(...)` sets what
 * that is, per call; a stream asking for `stream_options.include_usage` gets it in a last chunk,
 * as OpenAI sends it), and `./window-counts.ts` sums them over a time window.
 *
 * @example
 * const up = await startScriptedUpstream(['east', 'west']);
 * up.at('east').usage({ prompt_tokens: 40, completion_tokens: 10 });          // 50 tokens a call
 * up.at('west').usage((body) => ({ prompt_tokens: 5, completion_tokens: Number(body.max_tokens ?? 1) }));
 * … demand above the limit …
 * const worst = busiestWindow(up.at('east').calls(), 60_000);               // { calls, tokens, from }
 * expect(worst.calls).toBeLessThanOrEqual(rpm * 1.05 + pods);
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fakeTimers, listenOnLoopback, onJsonBody } from './listen.js';
import { until } from './waits.js';

/** What a deployment does with one request. */
export type Step =
  /** A well-formed answer (JSON, or SSE when the request asked for a stream), after `latencyMs` before the headers. */
  | { readonly kind: 'ok'; readonly latencyMs?: number }
  /** This status with an OpenAI-style error body (or `body`), and Retry-After (or any other `headers`) when given. */
  | { readonly kind: 'status'; readonly status: number; readonly retryAfter?: string; readonly headers?: Readonly<Record<string, string>>; readonly body?: unknown; readonly latencyMs?: number }
  /** 200 with this body as it is (a body that is not the compatible format, say). */
  | { readonly kind: 'body'; readonly body: string }
  /** Reads the request, then resets the connection without a byte of answer. */
  | { readonly kind: 'reset-before-headers' }
  /** Streams: the head and the role chunk, then the connection is reset (before any content). */
  | { readonly kind: 'reset-before-content' }
  /** Streams: the head, the role chunk and one content chunk, then the connection is reset. */
  | { readonly kind: 'reset-after-content' }
  /** Streams: the head and the role chunk at once, the first content only after `ms`. */
  | { readonly kind: 'slow-first-content'; readonly ms: number }
  /** Streams: the head and the role chunk, then an in-band `data: {"error":…}` event, then the end. */
  | { readonly kind: 'in-band-error' }
  /** Never answers (until the gateway gives up). */
  | { readonly kind: 'hang' };

/** A chat answer's token counts (an embeddings answer uses `prompt_tokens` alone). */
export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}

/** The usage a deployment answers: the same for every call, or worked out from the request's body. */
export type UsageSetting = Usage | ((body: Readonly<Record<string, unknown>>) => Usage);

/** What a deployment did with a request: a step of its script, the model list, or a refusal (no step used). */
export type Handled = Step['kind'] | 'models' | 'refused';

export interface Received {
  readonly method: string;
  /** The path with its query, as sent. */
  readonly path: string;
  /** The key of its `Authorization: Bearer <key>`, or null when it had none. */
  readonly key: string | null;
  /** Why it was refused as the real service would: `path` (404), `key` (401), or null (served). */
  readonly refused: 'path' | 'key' | null;
  readonly body: Record<string, unknown>;
  readonly headers: IncomingMessage['headers'];
  readonly stream: boolean;
  readonly step: Handled;
  /** When it arrived: performance.now() of this process, and Date.now() (for a Retry-After given as a date). */
  readonly at: number;
  readonly wall: number;
  /**
   * The tokens the deployment billed for it: the `total_tokens` of the usage it answered (in the body,
   * or in a stream's usage chunk; a stream that did not ask for usage is billed the same), 0 for an
   * answer that was not `ok` or a refusal.
   */
  tokens: number;
  /** The gateway closed the connection before the answer was complete. */
  aborted: boolean;
  /** The answer was complete (or the deployment itself broke it off). */
  done: boolean;
}

export interface ScriptedDeployment {
  readonly name: string;
  /** http://127.0.0.1:PORT/v1, for `api_base`. */
  readonly url: string;
  /** The key it takes: `keyOf(name)`. */
  readonly key: string;
  /** Queues steps for the next requests, one each, in order. */
  script(...steps: Step[]): void;
  /** The step for every request once the script is used up (`ok` at first). */
  always(step: Step): void;
  /** Every request, the refused ones too. */
  readonly received: Received[];
  /** The model calls it served (chat and embeddings; not the refusals, not the model list), with their `tokens`. */
  calls(): Received[];
  /**
   * The usage each call is answered with from now on, until `reset`: chat 3 prompt + 2 completion tokens and
   * embeddings 1 prompt token by default.
   */
  usage(setting: UsageSetting): void;
  /** The requests it refused that no test has taken yet. */
  refusals(): Received[];
  /** The refusals not taken yet, which are then taken (a test that provokes one on purpose reads it here). */
  takeRefusals(): Received[];
  /** Requests whose answer is not done and whose connection is open. */
  inFlight(): number;
  /** The most requests it ever had in flight at once. */
  maxInFlight(): number;
  aborted(): number;
  /** Resets every connection it has open now: an answer under way breaks off (counted done, not aborted). */
  dropConnections(): void;
  /** Forgets the script, the default, the usage and the record (refusals too). */
  reset(): void;
}

export interface ScriptedUpstream {
  at(name: string): ScriptedDeployment;
  readonly deployments: readonly ScriptedDeployment[];
  /** Requests received by all deployments. */
  total(): number;
  /** The refusals no test has taken yet, of every deployment. */
  refusals(): Received[];
  reset(): void;
  /** Polls `pred` every 5 ms; rejects after `timeoutMs`. */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const CREATED = 1_700_000_000;

/** The key of the scripted deployment `name`: each has its own. */
export function keyOf(name: string): string {
  return `sk-key-of-${name}`;
}

/** What the deployment serves, by method and path: what the gateway's openai adapter and probe call. */
function served(method: string, pathname: string): 'chat' | 'embeddings' | 'models' | null {
  if (method === 'POST' && pathname === '/v1/chat/completions') return 'chat';
  if (method === 'POST' && pathname === '/v1/embeddings') return 'embeddings';
  if (method === 'GET' && pathname === '/v1/models') return 'models';
  return null;
}

/** The key of an `Authorization: Bearer <key>` header, or null. */
function bearerKey(header: string | undefined): string | null {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return m ? (m[1] as string) : null;
}

/** api.openai.com's refusals, in its error shape: 404 for a method and path it does not serve, then 401 for the key. */
function refusalOf(method: string, pathname: string, got: string | null, key: string): { why: 'path' | 'key'; status: number; error: Record<string, unknown> } | null {
  if (served(method, pathname) === null) return { why: 'path', status: 404, error: { message: `Invalid URL (${method} ${pathname})`, type: 'invalid_request_error', param: null, code: null } };
  if (got === key) return null;
  const message = got === null ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)." : `Incorrect API key provided: ${got.slice(0, 8)}****. You can find your API key at https://platform.openai.com/account/api-keys.`;
  return { why: 'key', status: 401, error: { message, type: 'invalid_request_error', param: null, code: got === null ? null : 'invalid_api_key' } };
}

export async function startScriptedUpstream(names: readonly string[]): Promise<ScriptedUpstream> {
  const deployments = await Promise.all(names.map((name) => startDeployment(name)));
  const byName = new Map(deployments.map((d) => [d.name, d]));
  return {
    deployments,
    at(name) {
      const found = byName.get(name);
      if (!found) throw new Error(`no scripted deployment "${name}"`);
      return found;
    },
    total: () => deployments.reduce((n, d) => n + d.received.length, 0),
    refusals: () => deployments.flatMap((d) => d.refusals()),
    reset: () => deployments.forEach((d) => d.reset()),
    waitFor: async (pred, timeoutMs = 2000) => void (await until(pred, 'a condition on the scripted deployments', timeoutMs)),
    close: async () => {
      await Promise.all(deployments.map((d) => d.close()));
    },
  };
}

async function startDeployment(name: string): Promise<ScriptedDeployment & { close(): Promise<void> }> {
  const key = keyOf(name);
  const queue: Step[] = [];
  let fallback: Step = { kind: 'ok' };
  let usageSetting: UsageSetting | undefined;
  const received: Received[] = [];
  const taken = new Set<Received>();
  const refusals = () => received.filter((r) => r.refused !== null && !taken.has(r));
  const timers = fakeTimers();
  const later = timers.later;
  let open = 0;
  let peak = 0;
  /** Answers under way: marked done before their connection is dropped on purpose. */
  const underway = new Set<() => void>();

  const server = http.createServer((req, res) => {
    onJsonBody(req, (body) => {
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      const pathname = new URL(path, 'http://fake').pathname;
      const got = bearerKey(req.headers.authorization);
      const refusal = refusalOf(method, pathname, got, key);
      // A refusal, or the model list, uses no step of the script: the real service answers both before any model runs.
      const step = refusal === null && served(method, pathname) !== 'models' ? (queue.shift() ?? fallback) : null;
      const handled: Handled = refusal !== null ? 'refused' : step === null ? 'models' : step.kind;
      const record: Received = { method, path, key: got, refused: refusal?.why ?? null, body, headers: req.headers, stream: body.stream === true, step: handled, at: performance.now(), wall: Date.now(), tokens: 0, aborted: false, done: false };
      received.push(record);
      open++;
      peak = Math.max(peak, open);
      let settled = false;
      const settle = (how: 'done' | 'aborted') => {
        if (settled) return;
        settled = true;
        open--;
        if (how === 'aborted') record.aborted = true;
        else record.done = true;
      };
      const brokeOff = () => settle('done');
      underway.add(brokeOff);
      res.on('close', () => {
        underway.delete(brokeOff);
        settle(res.writableFinished ? 'done' : 'aborted');
      });
      if (refusal !== null) return sendJson(res, JSON.stringify({ error: refusal.error }), refusal.status);
      if (step === null) return sendJson(res, JSON.stringify({ object: 'list', data: [{ id: `model-${name}`, object: 'model', created: CREATED, owned_by: 'fake' }] }));
      answer(step, record, pathname, res, later, brokeOff);
    });
  });
  const { port, sockets } = await listenOnLoopback(server);

  return {
    name,
    url: `http://127.0.0.1:${port}/v1`,
    key,
    received,
    calls: () => received.filter((r) => r.refused === null && r.step !== 'models'),
    usage: (setting) => void (usageSetting = setting),
    refusals,
    takeRefusals() {
      const now = refusals();
      for (const r of now) taken.add(r);
      return now;
    },
    script: (...steps) => void queue.push(...steps),
    always: (step) => void (fallback = step),
    inFlight: () => open,
    maxInFlight: () => peak,
    aborted: () => received.filter((r) => r.aborted).length,
    dropConnections() {
      for (const done of underway) done();
      for (const s of sockets) s.resetAndDestroy();
    },
    reset() {
      queue.length = 0;
      fallback = { kind: 'ok' };
      usageSetting = undefined;
      received.length = 0;
      taken.clear();
      peak = open;
    },
    close: () =>
      new Promise<void>((resolve) => {
        timers.clear();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };

  /** The answer of one step; `brokeOff` marks an answer the deployment ended on purpose as done, not aborted. */
  function answer(step: Step, record: Received, pathname: string, res: ServerResponse, after: (ms: number, fn: () => void) => void, brokeOff: () => void): void {
    const model = typeof record.body.model === 'string' ? record.body.model : 'unknown';
    const isEmbeddings = served(record.method, pathname) === 'embeddings';
    const usage = usageOf(usageSetting, record.body, isEmbeddings);
    const alive = () => !res.destroyed && !res.writableEnded;
    const reset = () => {
      brokeOff();
      res.socket?.resetAndDestroy();
    };
    switch (step.kind) {
      case 'hang':
        return;
      case 'reset-before-headers':
        return reset();
      case 'status':
        return after(step.latencyMs ?? 0, () => {
          if (!alive()) return;
          const body = JSON.stringify(step.body ?? { error: { message: `${name} says ${step.status}`, type: 'upstream_error', code: null } });
          const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
          if (step.retryAfter !== undefined) headers['retry-after'] = step.retryAfter;
          Object.assign(headers, step.headers);
          res.writeHead(step.status, headers);
          res.end(body);
        });
      case 'body':
        return sendJson(res, step.body);
      case 'ok':
        return after(step.latencyMs ?? 0, () => {
          if (!alive()) return;
          record.tokens = usage.total_tokens;
          if (isEmbeddings) return sendJson(res, embeddingsBody(model, usage));
          if (!record.stream) return sendJson(res, completionBody(model, name, usage));
          streamHead(res);
          res.end(streamEvents(model, name, includesUsage(record.body) ? usage : null).join(''));
        });
      default: {
        // The stream steps (meant for stream requests; any request gets the event stream).
        streamHead(res);
        const events = streamEvents(model, name, null);
        const role = events[0] as string;
        res.write(role);
        if (step.kind === 'reset-before-content') return after(20, reset);
        if (step.kind === 'reset-after-content') {
          res.write(events[1] as string);
          return after(20, reset);
        }
        if (step.kind === 'in-band-error') {
          res.end(`data: ${JSON.stringify({ error: { message: `${name} broke mid-stream`, type: 'server_error', code: 'overloaded' } })}\n\n`);
          return;
        }
        // slow-first-content
        return after(step.ms, () => {
          if (alive()) res.end(events.slice(1).join(''));
        });
      }
    }
  }
}

function sendJson(res: ServerResponse, body: string, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function streamHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** The usage of one answer, with its total: the setting's, or the defaults (chat 3 + 2, embeddings 1). */
function usageOf(setting: UsageSetting | undefined, body: Readonly<Record<string, unknown>>, embeddings: boolean): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const u = setting === undefined ? (embeddings ? { prompt_tokens: 1, completion_tokens: 0 } : { prompt_tokens: 3, completion_tokens: 2 }) : typeof setting === 'function' ? setting(body) : setting;
  // Embeddings have no completion: OpenAI's usage there is prompt_tokens and total_tokens.
  const completion = embeddings ? 0 : u.completion_tokens;
  return { prompt_tokens: u.prompt_tokens, completion_tokens: completion, total_tokens: u.prompt_tokens + completion };
}

/** The request asked for the usage chunk at the end of its stream. */
function includesUsage(body: Readonly<Record<string, unknown>>): boolean {
  const options = body.stream_options;
  return typeof options === 'object' && options !== null && (options as { include_usage?: unknown }).include_usage === true;
}

function completionBody(model: string, name: string, usage: ReturnType<typeof usageOf>): string {
  return JSON.stringify({
    id: `chatcmpl-${name}`,
    object: 'chat.completion',
    created: CREATED,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: `from ${name}` }, finish_reason: 'stop' }],
    usage,
  });
}

function embeddingsBody(model: string, usage: ReturnType<typeof usageOf>): string {
  return JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model, usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.total_tokens } });
}

/**
 * A role chunk, `from `, `<name>`, a finish chunk and [DONE]: the content names the deployment that answered. With
 * `usage` (the request asked for it), every chunk says `"usage":null` and a last chunk with no choices carries it, as
 * OpenAI streams it.
 */
function streamEvents(model: string, name: string, usage: ReturnType<typeof usageOf> | null): string[] {
  const event = (body: object) => `data: ${JSON.stringify({ id: `chatcmpl-${name}`, object: 'chat.completion.chunk', created: CREATED, model, ...body })}\n\n`;
  const chunk = (delta: object, finish: string | null) => event({ choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage: null } : {}) });
  const events = [chunk({ role: 'assistant', content: '' }, null), chunk({ content: 'from ' }, null), chunk({ content: name }, null), chunk({}, 'stop')];
  if (usage) events.push(event({ choices: [], usage }));
  return [...events, 'data: [DONE]\n\n'];
}

/**
 * A `model_list` entry of `alias` served by `d`, with `d.name` as its deployment id and `d.key` as its key; `extra` is more params
 * (`, weight: 3, order: 2`).
 */
export function deploymentYaml(alias: string, d: ScriptedDeployment, extra = ''): string {
  return `
  - model_name: ${alias}
    params: { model: openai/model-${d.name}, api_base: ${d.url}, api_key: ${d.key}${extra} }
    model_info: { id: ${d.name} }`;
}
