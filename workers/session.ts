/**
 * One worker's side of the protocol: receives frames from the front, runs
 * each call (parse → validate → resolve its group → the attempt loop,
 * workers/routing/attempts.ts) and answers with frames. Calls are
 * independent and concurrent; a call keeps the routing config it started
 * with even when a reload swaps it mid-flight. The deployment state is the
 * pod's, shared with every other session (protocol/deployment-state.ts).
 */
import { wholePayload, type ChannelEnd, type FrameSender, type Payload } from '../protocol/channel.js';
import type { RoutingConfig } from '../protocol/config.js';
import type { Backoff, CallFrame, FromWorker, HeaderList, IndexGrant, InferencePick, RouteLabels, RoutingNotice, ToWorker, Usage, WorkerState } from '../protocol/frames.js';
import { PrefixIndex, type PrefixIndexMemory } from '../protocol/prefix-index.js';
import { loadPromptHasher, promptBlocks, type PromptHasher, type PromptMessage } from '../protocol/prefix-hash.js';
import { DeploymentStates } from '../protocol/deployment-state.js';
import { DeploymentLimits } from '../protocol/deployment-limits.js';
import { GatewayError, isErrorCode, type ErrorCode } from '../protocol/errors.js';
import { ChurnMap } from '../protocol/churn-tables.js';
import { CallControl } from './call-control.js';
import { Flow } from './flow.js';
import { probeUpstream } from './probe.js';
import { forgetAddresses } from './upstream-http.js';
import { readRequestBody, toParsedRequest, type RequestBody } from '../protocol/request-body.js';
import { Router, type Deployment } from './router.js';
import { PROVIDERS } from './providers/index.js';
import { routeCall, type ClientSink, type RoutedRequest, type RoutingEnv } from './routing/attempts.js';
import { faultOf } from './routing/failure.js';
import { ResponsesSink } from './inbound/responses/sink.js';
import { MessagesSink } from './inbound/messages/sink.js';
import { localTokenCounter } from './inbound/messages/count-tokens.js';
import type { Upstream } from '../protocol/config.js';
import { CallTrace } from './call-trace.js';
import { onChainOutcome, regionChain } from './providers/bedrock/chain.js';

interface ActiveCall {
  readonly control: CallControl;
  readonly flow: Flow;
}

export class WorkerSession {
  readonly #port: FrameSender<FromWorker>;
  readonly #calls = new ChurnMap<number, ActiveCall>();
  readonly #states: DeploymentStates;
  readonly #limits: DeploymentLimits;
  readonly #worker: number;
  /** The prefix index of each deployment id with server_metrics, from the front's `indexes` frames (FrameSender.share). */
  #indexes = new Map<string, { readonly memory: PrefixIndexMemory; readonly index: PrefixIndex }>();
  /** The prompt hasher of the configured block size, once loaded (loaded when a config has a group that hashes). */
  #hasher: PromptHasher | null = null;
  #hasherLoading: Promise<PromptHasher> | null = null;
  #hasherChars = 0;
  /** Where prompts are hashed, one at a time (synchronously); each request keeps a copy of its hashes. */
  readonly #blocks = promptBlocks();
  #router: Router;
  #env: RoutingEnv;
  /** count_tokens calls: anthropic deployments count themselves, every other is counted here (count-tokens.ts). */
  #countEnv: RoutingEnv;

  /** `channel` is a worker thread's MessagePort end, or the in-thread end of GATEWAY_WORKERS=0. */
  constructor(channel: ChannelEnd<ToWorker, FromWorker>, routing: RoutingConfig, state: WorkerState) {
    this.#states = new DeploymentStates(state.memory, state.worker);
    this.#limits = new DeploymentLimits(state.limits);
    this.#worker = state.worker;
    this.#adopt(state.indexes);
    this.#router = this.#routerFor(routing);
    this.#env = this.#envFor(this.#router);
    this.#countEnv = { ...this.#env, adapterFor: counterFor };
    this.#port = channel((frame, payload) => this.#onFrame(frame, payload));
    // The AWS credential chain's changes (bedrock deployments without keys) go to the front's readiness, status and log.
    onChainOutcome((outcome) => this.#port.send({ t: 'aws_chain_state', id: 0, ...outcome }));
  }

  /** The indexes of the config that follows: a surviving id keeps its object (same memory), a new one is opened, a gone one dropped. */
  #adopt(grant: IndexGrant): void {
    const next = new Map<string, { readonly memory: PrefixIndexMemory; readonly index: PrefixIndex }>();
    for (const [id, memory] of Object.entries(grant)) {
      const kept = this.#indexes.get(id);
      next.set(id, kept !== undefined && kept.memory.buffer === memory.buffer ? kept : { memory, index: new PrefixIndex(memory, this.#worker) });
    }
    this.#indexes = next;
  }

  #routerFor(routing: RoutingConfig): Router {
    const router = new Router(routing, this.#limits, (id) => this.#indexes.get(id)?.index ?? null);
    // Loaded now (a few ms, once), so the first request that hashes finds it ready; a failure shows at that request.
    if (router.hashesPrompts) this.#hasherFor(router.settings.inference.prefixBlockChars).catch(() => undefined);
    return router;
  }

  /** The hasher of `blockChars`, loaded once per block size (the WebAssembly hash is instantiated by the first). */
  #hasherFor(blockChars: number): Promise<PromptHasher> {
    if (this.#hasherLoading === null || this.#hasherChars !== blockChars) {
      this.#hasherChars = blockChars;
      this.#hasher = null;
      const loading = (this.#hasherLoading = loadPromptHasher(blockChars));
      loading.then(
        (hasher) => {
          if (this.#hasherLoading === loading) this.#hasher = hasher;
        },
        () => undefined,
      );
    }
    return this.#hasherLoading;
  }

  /**
   * The chained block hashes of the request's chat messages (CONTRACT.md, Prefix affinity): a chat call's
   * own, a Responses or Messages call's chat translation's; null for an operation without messages.
   */
  async #hashPrompt(blockChars: number, op: CallFrame['op'], body: Record<string, unknown>, replies: ClientSink): Promise<Int32Array | null> {
    let messages: readonly unknown[] | null = null;
    if (op === 'chat') messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : null;
    else if (replies instanceof ResponsesSink || (replies instanceof MessagesSink && op === 'messages')) messages = replies.chatMessages();
    if (messages === null) return null;
    const ready = this.#hasher;
    const hasher = ready !== null && ready.blockChars === blockChars ? ready : await this.#hasherFor(blockChars);
    const count = hasher.hash(messages as readonly PromptMessage[], this.#blocks);
    return this.#blocks.hashes.slice(0, count);
  }

  #envFor(router: Router): RoutingEnv {
    return { states: this.#states, settings: router.settings, adapterFor, notice: (notice) => this.#notice(notice), fault: (requestId, err) => this.#port.send(faultOf(requestId, err)), now: Date.now, after };
  }

  #notice(notice: RoutingNotice): void {
    this.#port.send({ t: 'notice', ...notice });
  }

  #onFrame(frame: ToWorker, payload: Payload | undefined): void {
    switch (frame.t) {
      case 'call':
        // The body may be lent (read in place in shared memory, reused once this returns): it is parsed now.
        void this.#run(frame, parseBody(frame, payload), payloadBytes(payload));
        return;
      case 'cancel':
        this.#calls.get(frame.id)?.control.abort(CANCELLED);
        return;
      case 'pause':
        this.#calls.get(frame.id)?.flow.pause();
        return;
      case 'resume':
        this.#calls.get(frame.id)?.flow.resume();
        return;
      case 'indexes':
        this.#adopt(frame.indexes);
        return;
      case 'config':
        this.#router = this.#routerFor(frame.routing);
        forgetAddresses(frame.routing);
        this.#env = this.#envFor(this.#router);
        this.#countEnv = { ...this.#env, adapterFor: counterFor };
        return;
      case 'ping':
        this.#port.send({ t: 'pong', id: frame.id });
        return;
      case 'probe':
        void probeUpstream(frame).then((result) => this.#port.send(result));
        return;
      case 'aws_chain':
        void regionChain(frame.region)
          .resolve()
          .then((outcome) => this.#port.send({ t: 'aws_chain_state', id: frame.id, ...outcome }));
        return;
    }
  }

  async #run(frame: CallFrame, body: RequestBody | BadBody, bodyBytes: number): Promise<void> {
    const { id } = frame;
    const router = this.#router;
    const env = frame.op === 'count_tokens' ? this.#countEnv : this.#env;
    const call: ActiveCall = { control: new CallControl(), flow: new Flow() };
    this.#calls.set(id, call);
    // Tracing on (the front sent a context): the attempts' span ids, and what a sampled call reports.
    const trace = frame.trace === undefined ? null : new CallTrace(frame.trace, frame.op, body instanceof BadBody ? null : body.json);
    const sink = new FrameSink(this.#port, id, trace !== null && trace.sampled ? trace : null);
    // POST /v1/responses runs the chat path; `replies` translates what comes back (workers/inbound/responses/).
    let replies: ClientSink = sink;
    try {
      if (body instanceof BadBody) throw body.error;
      const { json, plain } = body;
      // Only a body the hand checks do not pass needs the zod schema: zod is loaded then, once per thread.
      if (!plain) (await import('../protocol/requests.js')).checkWithSchema(frame.op, json);
      const request = toParsedRequest(frame.op, json);
      // A Responses or Messages call asks its sink what to send each deployment (its own body, or the chat translation).
      let prepare: RoutedRequest['prepare'] = null;
      if (frame.op === 'responses') {
        const responses = (replies = new ResponsesSink(sink, request.body));
        prepare = (upstream) => responses.attempt(upstream);
      } else if (frame.op === 'messages' || frame.op === 'count_tokens') {
        const messages = (replies = new MessagesSink(sink, request.body, { headers: frame.headers ?? NO_HEADERS, native: speaksMessages, requestId: frame.requestId, op: frame.op }));
        prepare = (upstream) => messages.attempt(upstream);
      }
      const group = router.resolve(request.model);
      // Inference-aware with server_metrics: the prompt's blocks, hashed once for all the request's picks.
      const prompt = group.hashesPrompt ? await this.#hashPrompt(router.settings.inference.prefixBlockChars, frame.op, request.body, replies) : null;
      await routeCall(
        env,
        {
          group,
          op: frame.op,
          body: request.body,
          prepare,
          stream: request.stream,
          requestId: frame.requestId,
          maxResponseBytes: router.maxResponseBytes,
          control: call.control,
          flow: call.flow,
          trace,
          bodyBytes,
          prompt,
          sheddable: frame.sheddable === true,
        },
        replies,
      );
    } catch (err) {
      if (call.control.reason !== CANCELLED) {
        const error = toErrorData(err);
        if (error.code === 'internal_error') this.#env.fault(frame.requestId, err);
        replies.fail(error, NO_HEADERS);
      }
    } finally {
      this.#calls.delete(id);
      // After the answer, or after the client left: the attempts are the trace's either way.
      const spans = trace?.spans() ?? null;
      if (spans !== null) this.#port.send(spans);
    }
  }
}

/** Why a call's body could not be read; answered like any error of the call. */
class BadBody {
  constructor(readonly error: unknown) {}
}

/** The body's size, read before it is parsed (a lent body is reused once the frame is handled). */
function payloadBytes(payload: Payload | undefined): number {
  if (payload === undefined) return 0;
  if (payload instanceof Uint8Array) return payload.byteLength;
  let n = 0;
  for (const piece of payload) n += piece.byteLength;
  return n;
}

function parseBody(frame: CallFrame, payload: Payload | undefined): RequestBody | BadBody {
  try {
    return readRequestBody(frame.op, wholePayload(payload));
  } catch (err) {
    return new BadBody(err);
  }
}

/** The abort reason of a call whose client went away: nothing is answered. */
const CANCELLED = Symbol('cancelled');

const adapterFor = (deployment: Deployment) => PROVIDERS[deployment.upstream.provider];
/** A count_tokens call's adapter: anthropic's own count, else the local estimate (no upstream request). */
const counterFor = (deployment: Deployment) => (deployment.upstream.provider === 'anthropic' ? PROVIDERS.anthropic : localTokenCounter);
/** Whether a deployment takes a Messages call as it is (its adapter's passthrough). */
const speaksMessages = (upstream: Upstream): boolean => PROVIDERS[upstream.provider].speaksMessages?.(upstream) === true;
const NO_HEADERS: HeaderList = [];

/** RoutingEnv.after on the real clock. */
function after(ms: number, fire: () => void): () => void {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
}
const UNROUTED: RouteLabels = { model: 'unrouted', provider: 'none' };

/**
 * Turns the answer into frames, with who served it (set by `routed` before the answer). A sampled
 * call's trace sees the answer's bytes as they pass and adds its facts to the frame that ends it.
 */
class FrameSink implements ClientSink {
  labels: RouteLabels = UNROUTED;
  deployment: string | null = null;
  attempts = 0;
  fallback: string | null = null;
  waitedMs = 0;
  backoff: Backoff | null = null;
  /** An inference-aware pick's reason and prefix score (RoutingFacts.inference); null for any other. */
  inference: InferencePick | null = null;
  #done = false;

  constructor(
    readonly port: FrameSender<FromWorker>,
    readonly id: number,
    readonly trace: CallTrace | null,
  ) {}

  routed(deployment: string | null, attempts: number, fallback: string | null, labels: RouteLabels, waitedMs: number, backoff: Backoff | null, inference: InferencePick | null = null): void {
    this.inference = inference;
    this.deployment = deployment;
    this.attempts = attempts;
    this.fallback = fallback;
    this.labels = labels;
    this.waitedMs = waitedMs;
    this.backoff = backoff;
  }

  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void {
    if (!this.#finish()) return;
    const { deployment, attempts, fallback, waitedMs, backoff, trace } = this;
    const plain = { t: 'reply', id: this.id, status, contentType, headers, labels: this.labels, usage, upstreamMs, deployment, attempts, fallback, waitedMs, backoff } as const;
    // Only an inference-aware pick's frame carries its facts: every other is as it was.
    const frame = this.inference === null ? plain : { ...plain, inference: this.inference };
    if (trace === null) return this.port.lend(frame, body);
    trace.observe(body, false);
    this.port.lend({ ...frame, trace: trace.facts() }, body);
  }
  head(headers: HeaderList): void {
    const { deployment, attempts, fallback, waitedMs, backoff } = this;
    if (this.#done) return;
    const frame = { t: 'head', id: this.id, headers, labels: this.labels, deployment, attempts, fallback, waitedMs, backoff } as const;
    this.port.send(this.inference === null ? frame : { ...frame, inference: this.inference });
  }
  data(bytes: Payload): void {
    if (this.#done) return;
    if (this.trace !== null) this.trace.observe(bytes, true);
    this.port.send({ t: 'data', id: this.id }, bytes);
  }
  end(usage: Usage | null, upstreamMs: number): void {
    if (!this.#finish()) return;
    const frame = { t: 'end', id: this.id, usage, upstreamMs } as const;
    this.port.send(this.trace === null ? frame : { ...frame, trace: this.trace.facts() });
  }
  fail(error: { code: ErrorCode; message: string; events?: string }, headers: HeaderList): void {
    if (!this.#finish()) return;
    const { deployment, attempts, fallback, waitedMs, backoff } = this;
    const labels = this.labels === UNROUTED ? null : this.labels;
    const plain = { t: 'fail', id: this.id, code: error.code, message: error.message, labels, headers, events: error.events, deployment, attempts, fallback, waitedMs, backoff } as const;
    const frame = this.inference === null ? plain : { ...plain, inference: this.inference };
    this.port.send(this.trace === null ? frame : { ...frame, trace: this.trace.facts() });
  }
  #finish(): boolean {
    if (this.#done) return false;
    this.#done = true;
    return true;
  }
}

function toErrorData(err: unknown): { code: ErrorCode; message: string } {
  if (err instanceof GatewayError) return { code: err.code, message: err.message };
  const code = (err as { code?: unknown } | null)?.code;
  if (isErrorCode(code)) return { code, message: String((err as Error).message) };
  return { code: 'internal_error', message: 'internal gateway error' };
}
