/**
 * A fake vLLM or SGLang replica for the inference-aware routing tests and
 * the bench (issue 36): a real OpenAI-compatible HTTP server on 127.0.0.1
 * whose timing follows what makes a real one fast or slow.
 *
 * - Continuous batching: at most `maxRunning` requests run at once (vLLM's
 *   --max-num-seqs); the rest wait in a FIFO queue and are admitted as
 *   running ones finish. A request is also admitted only when the KV cache
 *   has room for its blocks, as vLLM's scheduler does.
 * - A KV prefix cache of `kvBlocks` blocks, keyed by the gateway's own block
 *   hashes (protocol/prefix-hash.ts, blocks of `blockChars` characters of the
 *   messages' roles and contents): a request reuses its leading cached blocks
 *   and prefills only the rest, `prefillMsPerBlock` each; then one output
 *   token every `decodeMsPerToken`. A finished request's prompt blocks stay
 *   cached but free (evictable, least recently used first, a request's tail
 *   block before its head, as vLLM frees them).
 * - GET /metrics in the server's own names, HELP and TYPE lines and labels:
 *   vLLM's `vllm:num_requests_waiting`, `vllm:num_requests_running`,
 *   `vllm:kv_cache_usage_perc` (or the pre-0.9 `vllm:gpu_cache_usage_perc`,
 *   or both as 0.9-0.10 show), `vllm:prefix_cache_queries_total` and
 *   `_hits_total` (tokens), labels model_name and engine; SGLang's
 *   `sglang:num_queue_reqs`, `sglang:num_running_reqs`, `sglang:token_usage`,
 *   label model_name. KV-cache use is what vLLM's block pool reports (1 −
 *   free/total, where cached blocks no request holds count as free; SGLang's
 *   token_usage likewise leaves out evictable tokens): the blocks held by
 *   running requests, prompt and output, over `kvBlocks`.
 *
 * Characters count 4 to a token (the Inference Extension's estimate), so a
 * block of 64 characters is 16 tokens, vLLM's default block size. Prompt
 * blocks past the 256 the hasher keys are never cached.
 *
 * Determinism: every step is an event (`arrival`, `start`, `first-token`,
 * `finish`); `waitFor` waits on them, never on a clock. `pause()` stops the
 * clock of the batch (prefill and decode make no progress, admission still
 * happens), so a test can fill the slots and read /metrics at leisure;
 * `resume()` lets it run on.
 *
 * Paths: POST /v1/chat/completions (stream or not, usage with
 * prompt_tokens_details.cached_tokens), GET /v1/models, GET /health, GET
 * /metrics; anything else 404 (FastAPI would answer a wrong method on a known
 * path 405; the gateway treats both as the same 4xx). With `apiKey`, a /v1
 * path without `Authorization: Bearer <key>` gets vLLM's 401 {"error":
 * "Unauthorized"}; /metrics and /health stay open, as on vLLM.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { ServerResponse } from 'node:http';
import { loadPromptHasher, MAX_PREFIX_BLOCKS, promptBlocks, type PromptHasher, type PromptMessage } from '../../protocol/prefix-hash.js';
import { listenOnLoopback, onJsonBody } from './listen.js';

export interface ReplicaOptions {
  /** Which server's /metrics it shows. Default vllm. */
  engine?: 'vllm' | 'sglang';
  /** The served model name (its `model_name` label, its /v1/models). */
  model?: string;
  /** When set, /v1 paths need `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Requests run at once; default 4. */
  maxRunning?: number;
  /** KV-cache size in blocks; default 1,024. */
  kvBlocks?: number;
  /** Characters per block, as the gateway's `prefix_block_chars`; default 64. */
  blockChars?: number;
  /** Prefill time per block not found in the cache; default 2 ms. */
  prefillMsPerBlock?: number;
  /** Time per output token; default 1 ms. */
  decodeMsPerToken?: number;
  /** Output tokens when the request names no max_tokens; default 8. */
  outputTokens?: number;
  /** vLLM's KV-cache gauge: 'current' (kv_cache_usage_perc), 'old' (gpu_cache_usage_perc, before 0.9), 'both' (0.9-0.10). Default current. */
  kvMetric?: 'current' | 'old' | 'both';
}

/** What happened to one request, in performance.now() ms. */
export interface ReplicaRequest {
  readonly id: string;
  readonly stream: boolean;
  readonly arrival: number;
  /** Prefill began (the request was admitted to a running slot); null while it waits. */
  start: number | null;
  /** Its first token was produced (TTFT = firstToken − arrival). */
  firstToken: number | null;
  end: number | null;
  /** Whole blocks of its prompt, and how many of them, from the first, were found cached. */
  readonly promptBlocks: number;
  cachedBlocks: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** The client left before the answer was complete. */
  aborted: boolean;
}

export type ReplicaEvent = 'arrival' | 'start' | 'first-token' | 'finish';

export interface Replica {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  /** origin + /v1, an api_base */
  readonly apiBase: string;
  /** Every chat request, in arrival order. */
  readonly requests: readonly ReplicaRequest[];
  readonly events: EventEmitter;
  waiting(): number;
  running(): number;
  /** KV-cache use as /metrics shows it, 0..1. */
  kvUsage(): number;
  /** Blocks in the prefix cache (held or free). */
  cachedBlockCount(): number;
  /** The /metrics body as it would be served now. */
  metricsText(): string;
  /** While set, GET /metrics answers this status with no figures (a metrics endpoint down); null: served again. */
  failMetrics(status: number | null): void;
  /** While set, chat completions answer this status with vLLM's error body, before any work; null: served again. */
  failChat(status: number | null): void;
  /** Prefill and decode stop where they are; admission still happens. */
  pause(): void;
  resume(): void;
  /** Resolves when `pred()` holds, checked now and after every event; rejects after `timeoutMs`. */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const CHARS_PER_TOKEN = 4;

interface Job {
  readonly record: ReplicaRequest;
  readonly hashes: Int32Array;
  readonly hashed: number;
  /** Blocks it holds while it runs: its cached prompt blocks are in `held`, the rest (uncacheable, output) counted here. */
  privateBlocks: number;
  held: number[];
  produced: number;
  readonly res: ServerResponse;
  readonly body: Record<string, unknown>;
  done: boolean;
  /** The next step, waiting for the batch's clock. */
  next: (() => void) | null;
  timer: NodeJS.Timeout | null;
}

export async function startReplica(options: ReplicaOptions = {}): Promise<Replica> {
  const engine = options.engine ?? 'vllm';
  const model = options.model ?? 'meta-llama/Llama-3.1-8B-Instruct';
  const maxRunning = options.maxRunning ?? 4;
  const kvBlocks = options.kvBlocks ?? 1024;
  const blockChars = options.blockChars ?? 64;
  const prefillMs = options.prefillMsPerBlock ?? 2;
  const decodeMs = options.decodeMsPerToken ?? 1;
  const defaultOutput = options.outputTokens ?? 8;
  const kvMetric = options.kvMetric ?? 'current';
  const tokensPerBlock = blockChars / CHARS_PER_TOKEN;
  const hasher: PromptHasher = await loadPromptHasher(blockChars);
  const blocks = promptBlocks();

  const events = new EventEmitter();
  const requests: ReplicaRequest[] = [];
  const queue: Job[] = [];
  const runningJobs = new Set<Job>();
  /** Prefix cache: block hash → requests holding it. Map order of `free` is LRU (first = least recent). */
  const refs = new Map<number, number>();
  const free = new Map<number, true>();
  let privateHeld = 0;
  let paused = false;
  let seq = 0;
  let prefixQueries = 0;
  let prefixHits = 0;
  const created = Date.now() / 1000;

  const emit = (event: ReplicaEvent, record: ReplicaRequest) => events.emit(event, record);
  const resident = () => refs.size + privateHeld;
  const heldBlocks = () => refs.size - free.size + privateHeld;

  /** Runs `fn` after `ms` of the batch's clock (which stops while paused). */
  const after = (job: Job, ms: number, fn: () => void) => {
    job.next = fn;
    if (!paused) job.timer = setTimeout(step, ms, job);
  };
  const step = (job: Job) => {
    job.timer = null;
    const fn = job.next;
    job.next = null;
    if (fn !== null && !job.done) fn();
  };

  function leadingCached(job: Job): number {
    let n = 0;
    while (n < job.hashed && refs.has(job.hashes[n] as number)) n++;
    return n;
  }

  /** Frees room for `n` new blocks by evicting free cached blocks, least recent first; false when there is no room. */
  function makeRoom(n: number): boolean {
    if (kvBlocks - resident() + free.size < n) return false;
    while (kvBlocks - resident() < n) {
      const victim = free.keys().next().value as number;
      free.delete(victim);
      refs.delete(victim);
    }
    return true;
  }

  function admit(): void {
    while (runningJobs.size < maxRunning && queue.length > 0) {
      const job = queue[0] as Job;
      const cached = leadingCached(job);
      const promptBlocks = job.record.promptBlocks;
      const outputBlocks = Math.ceil(job.record.completionTokens / tokensPerBlock);
      // New blocks: the uncached whole prompt blocks, a partial last one, and the output's.
      const fresh = promptBlocks - cached + 1 + outputBlocks;
      // Its cached blocks are held first, so making room cannot evict them.
      for (let i = 0; i < cached; i++) hold(job.hashes[i] as number, job);
      if (!makeRoom(fresh)) {
        release(job);
        return; // FIFO: the head waits for room, and so does everyone behind it
      }
      queue.shift();
      runningJobs.add(job);
      job.privateBlocks = fresh;
      privateHeld += fresh;
      job.record.cachedBlocks = cached;
      job.record.start = performance.now();
      prefixQueries += job.record.promptTokens;
      prefixHits += cached * tokensPerBlock;
      emit('start', job.record);
      after(job, (promptBlocks - cached) * prefillMs, () => prefilled(job));
    }
  }

  function hold(hash: number, job: Job): void {
    const n = refs.get(hash) ?? 0;
    if (n === 0) free.delete(hash);
    refs.set(hash, n + 1);
    job.held.push(hash);
  }

  function prefilled(job: Job): void {
    // The computed whole blocks enter the prefix cache, held by this request (moved out of its private count).
    const cached = job.record.cachedBlocks;
    for (let i = cached; i < job.hashed; i++) {
      const h = job.hashes[i] as number;
      if (refs.has(h)) continue; // computed meanwhile by another request: shared
      refs.set(h, 0);
      hold(h, job);
      job.privateBlocks--;
      privateHeld--;
    }
    job.record.firstToken = performance.now();
    emit('first-token', job.record);
    if (job.record.stream) writeChunk(job, { role: 'assistant', content: '' }, null);
    token(job);
  }

  function token(job: Job): void {
    job.produced++;
    if (job.record.stream) writeChunk(job, { content: `tok${job.produced} ` }, null);
    if (job.produced >= job.record.completionTokens) return finish(job, false);
    after(job, decodeMs, () => token(job));
  }

  function release(job: Job): void {
    // Tail first into the free list, so under pressure a prompt loses its end before its start (vLLM's order).
    for (let i = job.held.length - 1; i >= 0; i--) {
      const h = job.held[i] as number;
      const n = (refs.get(h) ?? 1) - 1;
      if (n > 0) refs.set(h, n);
      else if (refs.has(h)) {
        refs.set(h, 0);
        free.set(h, true);
      }
    }
    job.held = [];
    privateHeld -= job.privateBlocks;
    job.privateBlocks = 0;
  }

  function finish(job: Job, aborted: boolean): void {
    if (job.done) return;
    job.done = true;
    if (job.timer !== null) clearTimeout(job.timer);
    job.next = null;
    const wasRunning = runningJobs.delete(job);
    if (!wasRunning) {
      const at = queue.indexOf(job);
      if (at >= 0) queue.splice(at, 1);
    } else release(job);
    job.record.end = performance.now();
    job.record.aborted = aborted;
    if (!aborted) answer(job);
    emit('finish', job.record);
    admit();
  }

  function usage(job: Job) {
    const r = job.record;
    return { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens, prompt_tokens_details: { cached_tokens: r.cachedBlocks * tokensPerBlock } };
  }

  function writeChunk(job: Job, delta: Record<string, unknown> | null, finishReason: string | null, withUsage = false): void {
    const chunk: Record<string, unknown> = { id: job.record.id, object: 'chat.completion.chunk', created: Math.floor(created), model, choices: delta === null ? [] : [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] };
    if (withUsage) chunk.usage = usage(job);
    job.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }

  function answer(job: Job): void {
    const r = job.record;
    const finishReason = typeof job.body.max_tokens === 'number' || typeof job.body.max_completion_tokens === 'number' ? 'length' : 'stop';
    if (r.stream) {
      writeChunk(job, {}, finishReason);
      const streamOptions = job.body.stream_options as { include_usage?: unknown } | undefined;
      if (streamOptions?.include_usage === true) writeChunk(job, null, null, true);
      job.res.end('data: [DONE]\n\n');
      return;
    }
    const text = Array.from({ length: r.completionTokens }, (_, i) => `tok${i + 1} `).join('');
    sendJson(job.res, 200, { id: r.id, object: 'chat.completion', created: Math.floor(created), model, choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason }], usage: usage(job) });
  }

  function chat(body: Record<string, unknown>, res: ServerResponse): void {
    const messages = body.messages;
    if (!Array.isArray(messages) || messages.length === 0) {
      sendJson(res, 400, { object: 'error', message: 'messages: a non-empty list is required', type: 'BadRequestError', param: null, code: 400 });
      return;
    }
    hasher.hash(messages as PromptMessage[], blocks);
    // All the prompt's characters, past the hasher's cap too.
    let chars = 0;
    for (const m of messages as PromptMessage[]) chars += (typeof m?.role === 'string' ? m.role.length : 0) + 2 + (typeof m?.content === 'string' ? m.content.length : JSON.stringify(m?.content ?? '').length);
    const maxTokens = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body.max_tokens === 'number' ? body.max_tokens : defaultOutput;
    const record: ReplicaRequest = {
      id: `chatcmpl-sim${++seq}`,
      stream: body.stream === true,
      arrival: performance.now(),
      start: null,
      firstToken: null,
      end: null,
      promptBlocks: Math.floor(chars / blockChars),
      cachedBlocks: 0,
      promptTokens: Math.max(1, Math.ceil(chars / CHARS_PER_TOKEN)),
      completionTokens: Math.max(1, Math.floor(maxTokens)),
      aborted: false,
    };
    const job: Job = { record, hashes: blocks.hashes.slice(0, blocks.count), hashed: Math.min(blocks.count, MAX_PREFIX_BLOCKS), privateBlocks: 0, held: [], produced: 0, res, body, done: false, next: null, timer: null };
    requests.push(record);
    res.on('close', () => {
      if (!job.done) finish(job, true);
    });
    if (record.stream) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    queue.push(job);
    emit('arrival', record);
    admit();
  }

  const num = (v: number) => (Number.isInteger(v) ? v.toFixed(1) : String(v));
  function metricsText(): string {
    const kv = heldBlocks() / kvBlocks;
    const lines: string[] = [];
    if (engine === 'vllm') {
      const labels = `{model_name=${JSON.stringify(model)},engine="0"}`;
      const gauge = (name: string, help: string, v: number) => lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${labels} ${num(v)}`);
      const counter = (name: string, help: string, v: number) => lines.push(`# HELP ${name}_total ${help}`, `# TYPE ${name}_total counter`, `${name}_total${labels} ${num(v)}`, `# HELP ${name}_created ${help}`, `# TYPE ${name}_created gauge`, `${name}_created${labels} ${num(created)}`);
      gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', runningJobs.size);
      gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', queue.length);
      if (kvMetric !== 'current') gauge('vllm:gpu_cache_usage_perc', 'GPU KV-cache usage. 1 means 100 percent usage.' + (kvMetric === 'both' ? 'DEPRECATED: Use vllm:kv_cache_usage_perc instead.' : ''), kv);
      if (kvMetric !== 'old') gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', kv);
      counter('vllm:prefix_cache_queries', 'Prefix cache queries, in terms of number of queried tokens.', prefixQueries);
      counter('vllm:prefix_cache_hits', 'Prefix cache hits, in terms of number of cached tokens.', prefixHits);
    } else {
      const labels = `{model_name=${JSON.stringify(model)}}`;
      const gauge = (name: string, help: string, v: number) => lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${labels} ${num(v)}`);
      gauge('sglang:num_running_reqs', 'The number of running requests.', runningJobs.size);
      gauge('sglang:num_used_tokens', 'The number of used tokens.', heldBlocks() * tokensPerBlock);
      gauge('sglang:token_usage', 'The token usage.', kv);
      gauge('sglang:num_queue_reqs', 'The number of requests in the waiting queue.', queue.length);
      gauge('sglang:cache_hit_rate', 'The prefix cache hit rate.', prefixQueries === 0 ? 0 : prefixHits / prefixQueries);
    }
    return lines.join('\n') + '\n';
  }

  let metricsFailure: number | null = null;
  let chatFailure: number | null = null;
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://replica').pathname;
    const method = req.method ?? 'GET';
    if (options.apiKey !== undefined && path.startsWith('/v1') && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      req.resume();
      sendJson(res, 401, { error: 'Unauthorized' });
      return;
    }
    if (method === 'POST' && path === '/v1/chat/completions') {
      if (chatFailure !== null) {
        const status = chatFailure;
        req.resume();
        sendJson(res, status, { object: 'error', message: 'simulated failure', type: 'InternalServerError', param: null, code: status });
        return;
      }
      onJsonBody(req, (body) => chat(body, res));
      return;
    }
    req.resume();
    if (method === 'GET' && path === '/metrics' && metricsFailure !== null) {
      res.writeHead(metricsFailure, { 'content-length': 0 });
      res.end();
    } else if (method === 'GET' && path === '/metrics') {
      const text = metricsText();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    } else if (method === 'GET' && path === '/health') {
      res.writeHead(200, { 'content-length': 0 });
      res.end();
    } else if (method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: Math.floor(created), owned_by: engine, root: model, parent: null, max_model_len: 131072 }] });
    } else sendJson(res, 404, { detail: 'Not Found' });
  });
  const { port, sockets } = await listenOnLoopback(server);
  const origin = `http://127.0.0.1:${port}`;

  return {
    origin,
    apiBase: `${origin}/v1`,
    requests,
    events,
    waiting: () => queue.length,
    running: () => runningJobs.size,
    kvUsage: () => heldBlocks() / kvBlocks,
    cachedBlockCount: () => refs.size,
    metricsText,
    failMetrics(status) {
      metricsFailure = status;
    },
    failChat(status) {
      chatFailure = status;
    },
    pause() {
      paused = true;
      for (const job of runningJobs) {
        if (job.timer !== null) {
          clearTimeout(job.timer);
          job.timer = null;
        }
      }
    },
    resume() {
      if (!paused) return;
      paused = false;
      // A paused step runs at once: the time it had left is dropped (a test that pauses wants order, not durations).
      for (const job of runningJobs) if (job.next !== null && job.timer === null) job.timer = setTimeout(step, 0, job);
    },
    waitFor(pred, timeoutMs = 5000) {
      if (pred()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const names: ReplicaEvent[] = ['arrival', 'start', 'first-token', 'finish'];
        const check = () => {
          if (!pred()) return;
          done();
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`replica waitFor: not true within ${timeoutMs} ms (running ${runningJobs.size}, waiting ${queue.length})`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          for (const n of names) events.off(n, check);
        };
        for (const n of names) events.on(n, check);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const job of [...runningJobs, ...queue]) {
          if (job.timer !== null) clearTimeout(job.timer);
          job.done = true;
        }
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
