/**
 * Programmable fake OpenAI-compatible deployments for the routing tests: one
 * real HTTP server per deployment (so one can be closed, refused or slow on
 * its own), each following a script of steps, one per request, then its
 * default step. Every request is recorded: its body, whether it asked for a
 * stream, and whether the gateway aborted it before the answer was done.
 *
 * Node built-ins only. `startScriptedUpstream(['east', 'west'])`, point each
 * deployment's `api_base` at `up.at('east').url`, then
 * `up.at('east').script({ status: 500 }, { status: 429, retryAfter: '2' })`.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fakeTimers, listenOnLoopback, onJsonBody } from './listen.js';

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

export interface Received {
  readonly body: Record<string, unknown>;
  readonly headers: IncomingMessage['headers'];
  readonly stream: boolean;
  readonly step: Step['kind'];
  /** When it arrived: performance.now() of this process, and Date.now() (for a Retry-After given as a date). */
  readonly at: number;
  readonly wall: number;
  /** The gateway closed the connection before the answer was complete. */
  aborted: boolean;
  /** The answer was complete (or the deployment itself broke it off). */
  done: boolean;
}

export interface ScriptedDeployment {
  readonly name: string;
  /** http://127.0.0.1:PORT/v1, for `api_base`. */
  readonly url: string;
  /** Queues steps for the next requests, one each, in order. */
  script(...steps: Step[]): void;
  /** The step for every request once the script is used up (`ok` at first). */
  always(step: Step): void;
  readonly received: Received[];
  /** Requests whose answer is not done and whose connection is open. */
  inFlight(): number;
  /** The most requests it ever had in flight at once. */
  maxInFlight(): number;
  aborted(): number;
  /** Resets every connection it has open now: an answer under way breaks off (counted done, not aborted). */
  dropConnections(): void;
  /** Forgets the script, the default and the record. */
  reset(): void;
}

export interface ScriptedUpstream {
  at(name: string): ScriptedDeployment;
  readonly deployments: readonly ScriptedDeployment[];
  /** Requests received by all deployments. */
  total(): number;
  reset(): void;
  /** Polls `pred` every 5 ms; rejects after `timeoutMs`. */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const CREATED = 1_700_000_000;

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
    reset: () => deployments.forEach((d) => d.reset()),
    waitFor: (pred, timeoutMs = 2000) => waitFor(pred, timeoutMs),
    close: async () => {
      await Promise.all(deployments.map((d) => d.close()));
    },
  };
}

async function waitFor(pred: () => boolean, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > until) throw new Error(`waitFor: not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function startDeployment(name: string): Promise<ScriptedDeployment & { close(): Promise<void> }> {
  const queue: Step[] = [];
  let fallback: Step = { kind: 'ok' };
  const received: Received[] = [];
  const timers = fakeTimers();
  const later = timers.later;
  let open = 0;
  let peak = 0;
  /** Answers under way: marked done before their connection is dropped on purpose. */
  const underway = new Set<() => void>();

  const server = http.createServer((req, res) => {
    onJsonBody(req, (body) => {
      const step = queue.shift() ?? fallback;
      const record: Received = { body, headers: req.headers, stream: body.stream === true, step: step.kind, at: performance.now(), wall: Date.now(), aborted: false, done: false };
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
      answer(step, record, req, res, later, brokeOff);
    });
  });
  const { port, sockets } = await listenOnLoopback(server);

  return {
    name,
    url: `http://127.0.0.1:${port}/v1`,
    received,
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
      received.length = 0;
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
  function answer(step: Step, record: Received, req: IncomingMessage, res: ServerResponse, after: (ms: number, fn: () => void) => void, brokeOff: () => void): void {
    const model = typeof record.body.model === 'string' ? record.body.model : 'unknown';
    const isEmbeddings = (req.url ?? '').endsWith('/embeddings');
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
          if (isEmbeddings) return sendJson(res, embeddingsBody(model));
          if (!record.stream) return sendJson(res, completionBody(model, name));
          streamHead(res);
          res.end(streamEvents(model, name).join(''));
        });
      default: {
        // The stream steps (meant for stream requests; any request gets the event stream).
        streamHead(res);
        const events = streamEvents(model, name);
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

function sendJson(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function streamHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

function completionBody(model: string, name: string): string {
  return JSON.stringify({
    id: `chatcmpl-${name}`,
    object: 'chat.completion',
    created: CREATED,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: `from ${name}` }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  });
}

function embeddingsBody(model: string): string {
  return JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model, usage: { prompt_tokens: 1, total_tokens: 1 } });
}

/** A role chunk, `from `, `<name>`, a finish chunk and [DONE]: the content names the deployment that answered. */
function streamEvents(model: string, name: string): string[] {
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: `chatcmpl-${name}`, object: 'chat.completion.chunk', created: CREATED, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return [chunk({ role: 'assistant', content: '' }, null), chunk({ content: 'from ' }, null), chunk({ content: name }, null), chunk({}, 'stop'), 'data: [DONE]\n\n'];
}

/**
 * A `model_list` entry of `alias` served by `d`, with `d.name` as its deployment id; `extra` is more params
 * (`, weight: 3, order: 2`).
 */
export function deploymentYaml(alias: string, d: ScriptedDeployment, extra = ''): string {
  return `
  - model_name: ${alias}
    params: { model: openai/model-${d.name}, api_base: ${d.url}, api_key: sk-key-of-${d.name}${extra} }
    model_info: { id: ${d.name} }`;
}
