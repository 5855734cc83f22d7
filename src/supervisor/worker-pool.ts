/**
 * The front's handle on the provider workers. Piscina owns the threads
 * (start, replace on death); each worker is attached once through a
 * long-lived piscina task that carries its MessagePort (see
 * workers/entry.ts), and calls are frames on those ports. A call goes to
 * the worker with the fewest calls in flight.
 */
import { existsSync, openSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { RoutingConfig } from '../../protocol/config.js';
import { enableTransferInNewIsolates, localChannel, wholePayload, type FrameSender, type Payload } from '../../protocol/channel.js';
import { FramePort } from '../../protocol/frame-port.js';
import { RingReader, RingWriter, ringMemory } from '../../protocol/shared-ring.js';
import { ChurnMap } from '../../protocol/churn-tables.js';
import type { DeploymentSlots } from './deployment-slots.js';
import {
  PROTOCOL_VERSION,
  type AttachTask,
  type AwsChainStateFrame,
  type CallFrame,
  type EndFrame,
  type FailFrame,
  type FromWorker,
  type HeadFrame,
  type HeaderList,
  type IndexGrant,
  type NoticeFrame,
  type Operation,
  type PongFrame,
  type ProbedFrame,
  type ProbeTarget,
  type ReplyFrame,
  type SessionConstructor,
  type SpansFrame,
  type ToWorker,
  type TraceContext,
  type WorkerHello,
} from '../../protocol/frames.js';

/** What the front does with a call's answer; exactly one of reply/end/fail ends it. */
export interface CallHandlers {
  /**
   * `body`: one buffer, or (inline) the upstream body in the pieces it was read in. Read it
   * before returning: its bytes may be a worker's shared ring, reused once this returns.
   */
  reply(frame: ReplyFrame, body: Payload): void;
  head(frame: HeadFrame): void;
  data(bytes: Uint8Array): void;
  end(frame: EndFrame): void;
  fail(frame: FailFrame): void;
}

/** See the Piscina options below; loadtest/RESULTS.md has the RSS it saves. */
const WORKER_YOUNG_GENERATION_MB = 12;
/**
 * Each worker's ring for reply bodies (protocol/shared-ring.ts): about 18 embeddings answers
 * at once. A body that finds no room, or is over a quarter of the ring, goes as a transferred
 * buffer of its own, as before.
 */
const REPLY_RING_BYTES = 4 * 1024 * 1024;
/**
 * Each worker's ring for request bodies and the front's frame records: a chat or embeddings
 * request is a few hundred bytes, so a burst of thousands fits; a body over 64 KiB goes as a
 * buffer of its own.
 */
const CALL_RING_BYTES = 256 * 1024;

/**
 * A worker that dies young is restarted later each time: at once the first time, then after
 * 100 ms, doubling up to 10 s, until one lives 10 s. A worker that cannot start (a broken
 * build, a bug at start) would otherwise be replaced in a tight loop: a thread start, 4.3 MB of
 * rings and an error line every few milliseconds (1.2 GB of RSS within seconds, measured).
 */
const FIRST_RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 10_000;
const STABLE_LIFE_MS = 10_000;
/**
 * A worker thread that has not answered a ping for this long, or not attached this long after its
 * start, is stopped (terminate(), which ends even a loop that never yields) and replaced like one
 * that died: the pod's liveness probe asks the front thread only, so nothing else would ever
 * replace a thread stuck in a loop, and with one worker the pod would stay up and unready for
 * good. Pings go every HEARTBEAT_MS.
 */
const DEFAULT_STALL_MS = 10_000;
const HEARTBEAT_MS = 1_000;

interface Slot {
  readonly index: number;
  /** Frames sent while the slot's worker is (re)starting wait in the port until it attaches. */
  port: FrameSender<ToWorker>;
  inFlight: number;
  /** Times this slot's worker died and was replaced. */
  restarts: number;
  /** Deaths in a row of workers that lived less than STABLE_LIFE_MS. */
  youngDeaths: number;
  /**
   * - waiting: for the restart of a worker that died young (restartTimer);
   * - starting: asked to attach (attachedAt), not yet said hello;
   * - running: said hello from `thread`; answeredAt is its last sign of life;
   * - stopping: silent too long, terminate() called; its exit detaches it.
   */
  phase: 'waiting' | 'starting' | 'running' | 'stopping';
  /** performance.now() when the slot's worker was last asked to attach. */
  attachedAt: number;
  restartTimer: NodeJS.Timeout | null;
  /** The thread id the slot's worker said hello from (running and stopping). */
  thread: number;
  /** performance.now() of the worker's hello or its last answer to a heartbeat ping. */
  answeredAt: number;
  /** The id of the heartbeat ping waiting for its answer. */
  heartbeat: number;
}

/** The frames that answer the pool's own questions (#ask), by the question's id. */
type ControlAnswer = PongFrame | ProbedFrame | AwsChainStateFrame;

/** A slot before its port exists (the caller gives it one at once). */
function newSlot(index: number, phase: Slot['phase']): Slot {
  return { index, inFlight: 0, restarts: 0, youngDeaths: 0, phase, attachedAt: 0, restartTimer: null, thread: 0, answeredAt: 0, heartbeat: 0 } as Omit<Slot, 'port'> as Slot;
}

/** Test seams: the file piscina loads, and how long a silent worker is given; and the keeper of the prefix indexes. */
export interface PoolOptions {
  readonly entry?: string;
  readonly stallMs?: number;
  /** The prefix indexes of deployments with server_metrics (src/inference/fleet.ts); none: no worker gets any. */
  readonly indexes?: IndexKeeper;
}

/**
 * What the pool needs of the front's prefix indexes: `assign` is called with every routing config before it
 * reaches a worker (at start and on each swap, whoever swaps), and the indexes it returns go to every worker
 * ahead of that config (an `indexes` frame, by FrameSender.share; a worker attached later gets them in its
 * attach task). A worker that dies may hold an index's lock: `takeBack` frees it.
 */
export interface IndexKeeper {
  assign(routing: RoutingConfig): IndexGrant;
  readonly grant: IndexGrant;
  takeBack(worker: number): void;
}

const NO_INDEXES: IndexKeeper = { assign: () => NO_GRANT, grant: Object.freeze({}), takeBack() {} };
const NO_GRANT: IndexGrant = Object.freeze({});

interface Pending {
  readonly slot: Slot;
  readonly handlers: CallHandlers;
}

export interface PoolStats {
  /** Worker threads; 0 in inline mode. */
  readonly workers: number;
  readonly inFlight: number;
  readonly restarts: number;
  readonly inFlightByWorker: readonly number[];
}

export class WorkerPool {
  /** Null in inline mode (size 0): one worker session runs on the front thread. */
  readonly #piscina: Piscina | null;
  readonly #slots: Slot[] = [];
  readonly #pending = new ChurnMap<number, Pending>();
  /** Pings, probes and AWS chain resolutions waiting for their answer, by frame id. */
  readonly #control = new Map<number, (frame: ControlAnswer) => void>();
  readonly #log: Logger;
  readonly #deployments: DeploymentSlots;
  readonly #indexes: IndexKeeper;
  #routing: RoutingConfig;
  #nextId = 1;
  #closing = false;
  /** Worker threads only: the pings that find a stuck worker. */
  #heartbeat: NodeJS.Timeout | null = null;
  #stallMs = DEFAULT_STALL_MS;
  /** Tracing on: where the workers' attempt reports go (src/tracing/). */
  onSpans: ((frame: SpansFrame) => void) | null = null;
  /** Where the workers' AWS credential chain reports go (src/supervisor/aws-chain.ts), asked for or not. */
  onAwsChain: ((frame: AwsChainStateFrame) => void) | null = null;

  /**
   * `size` worker threads; 0 runs one worker session inline on the front
   * thread (no thread hop: on a one-core pod a hop's wake-ups cost more
   * than the JSON work it moves off the front).
   */
  static async start(size: number, routing: RoutingConfig, log: Logger, deployments: DeploymentSlots, options: PoolOptions = {}): Promise<WorkerPool> {
    // The session (undici, the providers) is loaded on the front thread only when it runs there:
    // with worker threads the front never calls a provider, and undici alone is ~20 MB of RSS.
    return new WorkerPool(size === 0 ? (await import('../../workers/session.js')).WorkerSession : size, routing, log, deployments, options);
  }

  /**
   * `workers`: how many worker threads, or the session class to run inline on this thread.
   * `deployments`: the shared deployment state every session routes by (worker i is its worker i).
   * `options.entry`: the file piscina loads, by default the build's (workerEntryPath); `options.stallMs`: DEFAULT_STALL_MS.
   */
  private constructor(workers: number | SessionConstructor, routing: RoutingConfig, log: Logger, deployments: DeploymentSlots, options: PoolOptions) {
    this.#routing = routing;
    this.#log = log;
    this.#deployments = deployments;
    this.#indexes = options.indexes ?? NO_INDEXES;
    const indexes = this.#indexes.assign(routing);
    if (typeof workers !== 'number') {
      const InlineSession = workers;
      this.#piscina = null;
      const { a, b } = localChannel<FromWorker, ToWorker>();
      const slot = newSlot(0, 'running');
      slot.port = a((frame, payload) => this.#onFrame(frame, payload));
      new InlineSession(b, routing, { memory: deployments.memory, limits: deployments.limitsMemory, worker: 0, indexes });
      this.#slots.push(slot);
      return;
    }
    // Before the threads exist: their isolates then free lent buffers at once (protocol/channel.ts).
    enableTransferInNewIsolates();
    this.#piscina = new Piscina({
      filename: options.entry ?? workerEntryPath(),
      minThreads: workers,
      maxThreads: workers,
      // Each worker runs exactly one (lifelong) attach task; requests are frames, not tasks.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      atomics: 'disabled',
      // A worker's garbage is short-lived (one request's buffers and objects): a small young
      // generation holds it as well as V8's default 48 MiB does, for a third of the memory.
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    });
    for (let index = 0; index < workers; index++) {
      const slot = newSlot(index, 'starting');
      this.#slots.push(slot);
      this.#attach(slot, 0);
    }
    this.#piscina.on('message', (message: unknown) => this.#hello(message));
    this.#stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    this.#heartbeat = setInterval(() => this.#beat(), Math.min(HEARTBEAT_MS, this.#stallMs / 2));
    this.#heartbeat.unref();
  }

  get size(): number {
    return this.#slots.length;
  }

  /** True when provider calls run on the front thread (GATEWAY_WORKERS=0). */
  get inline(): boolean {
    return this.#piscina === null;
  }

  /**
   * Starts a call. A worker's copy of the body is made before this returns; in-thread the body itself is handed
   * over and must not be reused. `trace`: the call's trace context, only when tracing is on.
   */
  call(op: Operation, requestId: string, body: Uint8Array, handlers: CallHandlers, trace: TraceContext | null, headers: HeaderList | null = null, sheddable = false): number {
    const slot = this.#leastBusy();
    const id = this.#nextId++;
    slot.inFlight++;
    this.#pending.set(id, { slot, handlers });
    // Only what the call has: a chat call's frame is as it was (no trace, no headers). Each shape is one literal: a frame
    // spread from another ({ ...frame, headers }) cost msgpackr 2.2 µs to pack against 0.7 µs (its slow path).
    let frame: CallFrame = trace === null ? (headers === null ? { t: 'call', id, op, requestId } : { t: 'call', id, op, requestId, headers }) : headers === null ? { t: 'call', id, op, requestId, trace } : { t: 'call', id, op, requestId, trace, headers };
    // Only a sheddable request (x-switchyard-priority) pays the spread.
    if (sheddable) frame = { ...frame, sheddable };
    slot.port.lend(frame, body);
    return id;
  }

  /** The client left: the worker aborts its upstream request; later frames for it are dropped. */
  cancel(id: number): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#settle(id, pending);
    pending.slot.port.send({ t: 'cancel', id });
  }

  pause(id: number): void {
    this.#pending.get(id)?.slot.port.send({ t: 'pause', id });
  }

  resume(id: number): void {
    this.#pending.get(id)?.slot.port.send({ t: 'resume', id });
  }

  /**
   * Swaps the routing config in every worker; calls already running keep theirs. Every swap comes
   * here (a reload, a DNS re-resolution of replicas), so the prefix indexes follow it: those of
   * `routing` go to each worker just before it.
   */
  setRouting(routing: RoutingConfig): void {
    this.#routing = routing;
    const indexes = this.#indexes.assign(routing);
    for (const slot of this.#slots) {
      slot.port.share({ t: 'indexes', indexes });
      slot.port.send({ t: 'config', routing });
    }
  }

  /** Resolves with the time each worker took to answer a ping, or null for one that did not answer in time. */
  ping(timeoutMs: number): Promise<Array<number | null>> {
    return Promise.all(
      this.#slots.map((slot) => {
        const started = performance.now();
        return this.#ask(slot, timeoutMs, (id) => ({ t: 'ping', id })).then((frame) => (frame ? performance.now() - started : null));
      }),
    );
  }

  /** Asks the least busy worker to probe an upstream; null when the worker itself did not answer in time. */
  probe(upstream: ProbeTarget, timeoutMs: number): Promise<ProbedFrame | null> {
    return this.#ask(this.#leastBusy(), timeoutMs + 250, (id) => ({ t: 'probe', id, upstream, timeoutMs })) as Promise<ProbedFrame | null>;
  }

  /**
   * Asks the least busy worker to resolve the AWS credential chain of `region` now (loading the AWS
   * packages if it had not): readiness, for a pod whose only credentials are the chain's. Null when
   * the worker did not answer in time; its answer still reaches `onAwsChain` when it comes.
   */
  resolveAwsChain(region: string, timeoutMs: number): Promise<AwsChainStateFrame | null> {
    return this.#ask(this.#leastBusy(), timeoutMs, (id) => ({ t: 'aws_chain', id, region })) as Promise<AwsChainStateFrame | null>;
  }

  #ask(slot: Slot, timeoutMs: number, frame: (id: number) => ToWorker): Promise<ControlAnswer | null> {
    return new Promise((resolve) => {
      const id = this.#nextId++;
      const timer = setTimeout(() => {
        this.#control.delete(id);
        resolve(null);
      }, timeoutMs);
      this.#control.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      slot.port.send(frame(id));
    });
  }

  stats(): PoolStats {
    let inFlight = 0;
    let restarts = 0;
    const inFlightByWorker: number[] = [];
    for (const slot of this.#slots) {
      inFlight += slot.inFlight;
      restarts += slot.restarts;
      inFlightByWorker.push(slot.inFlight);
    }
    return { workers: this.#piscina ? this.#slots.length : 0, inFlight, restarts, inFlightByWorker };
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#heartbeat !== null) clearInterval(this.#heartbeat);
    for (const slot of this.#slots) {
      if (slot.restartTimer !== null) clearTimeout(slot.restartTimer);
      slot.port.close();
    }
    await this.#piscina?.destroy();
  }

  /** Gives the slot a new port now and its worker the other end after `delayMs`; calls sent meanwhile wait in the port. */
  #attach(slot: Slot, delayMs: number): void {
    const { port1, port2 } = new MessageChannel();
    const replies = ringMemory(REPLY_RING_BYTES);
    const calls = ringMemory(CALL_RING_BYTES);
    const rings = { borrowFrom: new RingReader(replies), lendInto: new RingWriter(calls) };
    slot.phase = 'waiting';
    slot.port = new FramePort<FromWorker, ToWorker>(port1, (frame, payload) => this.#onFrame(frame, payload), rings);
    const run = () => {
      slot.restartTimer = null;
      slot.phase = 'starting';
      slot.attachedAt = performance.now();
      const state = { memory: this.#deployments.memory, limits: this.#deployments.limitsMemory, worker: slot.index, indexes: this.#indexes.grant };
      // The routing of now: a reload while the slot waited also sent its config frame into the port, which comes after.
      const task: AttachTask = { protocol: PROTOCOL_VERSION, port: port2 as unknown as AttachTask['port'], replies, calls, routing: this.#routing, state };
      (this.#piscina as Piscina).run(task, { transferList: [port2] as never }).then(
        () => this.#detached(slot, null),
        (err: unknown) => this.#detached(slot, err),
      );
    };
    if (delayMs === 0) run();
    else slot.restartTimer = setTimeout(run, delayMs);
  }

  /** A worker attached (workers/entry.ts): its slot learns its thread; a late word from a thread already replaced is ignored. */
  #hello(message: unknown): void {
    const hello = message as WorkerHello | null;
    if (hello?.t !== 'switchyard.hello') return;
    const slot = this.#slots[hello.worker];
    if (slot === undefined || slot.phase !== 'starting') return;
    slot.phase = 'running';
    slot.thread = hello.thread;
    slot.answeredAt = performance.now();
  }

  /**
   * Every HEARTBEAT_MS: a ping to each running worker; one silent for stallMs is stopped. A worker
   * that never said hello within stallMs of its start is stopped too, once every starting worker
   * is that late: its thread is then one of those no slot knows, and they are all stopped.
   */
  #beat(): void {
    const now = performance.now();
    let lateStarts = 0;
    let starting = 0;
    for (const slot of this.#slots) {
      if (slot.phase === 'starting') {
        starting++;
        if (now - slot.attachedAt >= this.#stallMs) lateStarts++;
      }
      if (slot.phase !== 'running') continue;
      if (now - slot.answeredAt < this.#stallMs) {
        // One heartbeat ping per slot waits at a time, with no timer of its own: the next beat drops an unanswered one.
        this.#control.delete(slot.heartbeat);
        const id = (slot.heartbeat = this.#nextId++);
        this.#control.set(id, () => (slot.answeredAt = performance.now()));
        slot.port.send({ t: 'ping', id });
        continue;
      }
      this.#stop(slot, [slot.thread], now - slot.answeredAt, 'running');
    }
    if (lateStarts === 0 || lateStarts < starting) return;
    const known = new Set(this.#slots.flatMap((slot) => (slot.phase === 'running' || slot.phase === 'stopping' ? [slot.thread] : [])));
    const unknown = (this.#piscina as Piscina).threads.map((w) => w.threadId).filter((id) => !known.has(id));
    // No thread to stop: piscina has not started one for the task (it gives up on threads that fail to boot).
    if (unknown.length === 0) return;
    for (const slot of this.#slots) if (slot.phase === 'starting') this.#stop(slot, unknown, now - slot.attachedAt, 'starting');
  }

  /** Stops a silent worker (its thread among `threads`): its exit fails the attach task, which replaces it like a worker that died. */
  #stop(slot: Slot, threads: readonly number[], silentMs: number, phase: 'running' | 'starting'): void {
    slot.phase = 'stopping';
    const silent = Math.round(silentMs);
    const what = phase === 'running' ? 'has not answered' : 'has not attached';
    this.#log.error({ event: 'worker_stalled', worker: slot.index, phase, silent_ms: silent }, `provider worker ${slot.index} ${what} for ${silent} ms; stopping it`);
    for (const worker of (this.#piscina as Piscina).threads) if (threads.includes(worker.threadId)) void worker.terminate();
  }

  /** A worker's attach task ended: it died, or the pool is closing. */
  #detached(slot: Slot, err: unknown): void {
    if (this.#closing) return;
    slot.youngDeaths = performance.now() - slot.attachedAt < STABLE_LIFE_MS ? slot.youngDeaths + 1 : 1;
    const delayMs = slot.youngDeaths <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** (slot.youngDeaths - 2));
    const message = delayMs === 0 ? 'provider worker stopped; replacing it' : `provider worker stopped (${slot.youngDeaths} young deaths in a row); replacing it in ${delayMs} ms`;
    this.#log.error({ event: 'worker_died', worker: slot.index, err: err instanceof Error ? err.message : String(err), deaths_in_a_row: slot.youngDeaths, restart_in_ms: delayMs }, message);
    slot.restarts++;
    // What it held in the shared deployment state (calls in flight, a half-open trial) is given back for it.
    this.#deployments.states.takeBack(slot.index);
    this.#indexes.takeBack(slot.index);
    for (const [id, pending] of this.#pending.entries()) {
      if (pending.slot !== slot) continue;
      this.#settle(id, pending);
      pending.handlers.fail({ t: 'fail', id, code: 'worker_crashed', message: 'the worker handling this request stopped', labels: null, headers: [], deployment: null, attempts: 0, fallback: null, waitedMs: 0, backoff: null });
    }
    slot.port.close();
    this.#attach(slot, delayMs);
  }

  #onFrame(frame: FromWorker, payload: Payload | undefined): void {
    if (frame.t === 'pong' || frame.t === 'probed') {
      const done = this.#control.get(frame.id);
      this.#control.delete(frame.id);
      done?.(frame);
      return;
    }
    if (frame.t === 'aws_chain_state') {
      this.onAwsChain?.(frame);
      const asked = this.#control.get(frame.id);
      this.#control.delete(frame.id);
      return asked?.(frame);
    }
    if (frame.t === 'notice') return this.#logNotice(frame);
    if (frame.t === 'fault') return this.#log.error({ event: 'internal_error', request_id: frame.requestId, error: frame.error, stack: frame.stack }, `internal error in a worker, answered 500: ${frame.error}`);
    // A call's attempts, after its answer (or after its client left): the call may be settled already.
    if (frame.t === 'spans') return this.onSpans?.(frame);
    const pending = this.#pending.get(frame.id);
    if (!pending) return; // cancelled, or its worker was replaced
    const { handlers } = pending;
    switch (frame.t) {
      case 'reply':
        this.#settle(frame.id, pending);
        handlers.reply(frame, payload ?? []);
        return;
      case 'head':
        handlers.head(frame);
        return;
      case 'data':
        if (payload) handlers.data(wholePayload(payload));
        return;
      case 'end':
        this.#settle(frame.id, pending);
        handlers.end(frame);
        return;
      case 'fail':
        this.#settle(frame.id, pending);
        handlers.fail(frame);
        return;
    }
  }

  /** docs/ROUTING.md, "Logs": a cooldown that began, a provider that refused the gateway's key. */
  #logNotice(n: NoticeFrame): void {
    const fields = { event: n.event, model: n.model, deployment: n.deployment, code: n.code, status: n.status };
    if (n.event === 'deployment_cooled') {
      this.#log.warn({ ...fields, cooldown_ms: n.cooldownMs }, `deployment "${n.deployment}" of "${n.model}" cooling down for ${Math.round(n.cooldownMs / 1000)} s after ${n.code}`);
    } else {
      this.#log.error({ ...fields, provider_message: n.detail }, `the provider of deployment "${n.deployment}" refused the gateway's credentials (status ${n.status})`);
    }
  }

  #settle(id: number, pending: Pending): void {
    this.#pending.delete(id);
    pending.slot.inFlight--;
  }

  #leastBusy(): Slot {
    let best = this.#slots[0] as Slot;
    for (const slot of this.#slots) if (slot.inFlight < best.inFlight) best = slot;
    return best;
  }
}

let pinnedEntry: string | null = null;

/** What piscina loads: tools/bundle.mjs's CommonJS loader of `entry.js` (why: WORKER_LOADER there). */
const WORKER_ENTRY = 'entry.cjs';

/**
 * Workers always run the bundled worker, `worker/entry.js` of the build this code came from
 * (tools/bundle.mjs), through the loader beside it, whether the front runs bundled
 * (`<build>/server.js`) or from tsc's output (`<build>/src/...`); from the sources (the tests),
 * the build `dist/` points to now. The path is resolved once, through the `dist` symlink
 * (tools/build.mjs), so a worker that restarts after a rebuild runs the same build as the
 * front, never a newer one.
 *
 * The loader file stays open for the life of the process: tools/build.mjs removes an old build
 * only when no process holds a file of it open, so a running gateway keeps its build.
 */
function workerEntryPath(): string {
  if (pinnedEntry !== null) return pinnedEntry;
  let dir = dirname(fileURLToPath(import.meta.url));
  let entry = join(dir, 'worker', WORKER_ENTRY);
  while (!existsSync(entry)) {
    if (existsSync(join(dir, 'package.json'))) {
      entry = join(dir, 'dist', 'worker', WORKER_ENTRY);
      if (!existsSync(entry)) throw new Error(`worker entry ${entry} is missing: run "npm run build" first`);
      break;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the package root to locate the worker entry');
    dir = parent;
    entry = join(dir, 'worker', WORKER_ENTRY);
  }
  pinnedEntry = realpathSync(entry);
  openSync(pinnedEntry, 'r'); // never closed: the build's lease (above)
  return pinnedEntry;
}
