/**
 * Deployment state, one view per pod: a SharedArrayBuffer with one fixed
 * slot per deployment, read and written by every worker thread (picks and
 * attempt outcomes) and by the front (status, metrics, a dead worker's
 * leftovers). The front makes it once at start and hands it to each worker
 * when it attaches; with GATEWAY_WORKERS=0 the inline session uses the same
 * object. docs/ARCHITECTURE.md, "Routing", says why shared memory and not
 * the front thread.
 *
 * Counters that threads race on (in flight, failures, the half-open trial)
 * are Int32 fields under Atomics, so a cap is never exceeded and exactly
 * one trial passes. Times and the latency average are Float64 fields,
 * written whole (an aligned 8-byte store on x64 and arm64); a race between
 * two of those writes costs one pick's precision, never a wrong count.
 *
 * Per slot, 128 bytes:
 *
 *   int32 [0..7]   in_flight, failures (current window), trial holder (worker + 1, or 0),
 *                  latency samples, cooldowns, last error code, last error status,
 *                  the status of the answer that asked for the back-off
 *   float64 [4..8] window start, cooldown until, latency EWMA (ms), last error at (Date.now ms),
 *                  back-off until (Date.now ms: the provider's Retry-After)
 *   float64 [9..10] inference-aware routing (a deployment with server_metrics): the last good
 *                  scrape's time (Date.now ms, 0 never) and its KV-cache use (0..1)
 *   int32 [22..25] the same scrape's waiting and running requests, this pod's calls sent since
 *                  that scrape and still in flight, the scrape's generation (bumped by each)
 *   int32 [26..31] spare
 *
 * After the slots, one Int32 per (worker, slot): that worker's share of
 * in_flight, so the front can take back what a worker that died held.
 */
import { ERRORS, type ErrorCode } from './errors.js';

const SLOT_BYTES = 128;
const I32_PER_SLOT = SLOT_BYTES / 4;
const F64_PER_SLOT = SLOT_BYTES / 8;

const IN_FLIGHT = 0;
const FAILURES = 1;
const TRIAL = 2;
const SAMPLES = 3;
const COOLDOWNS = 4;
const LAST_CODE = 5;
const LAST_STATUS = 6;
const BACKOFF_STATUS = 7;
const WINDOW_START = 4;
const COOLDOWN_UNTIL = 5;
const EWMA = 6;
const LAST_AT = 7;
const BACKOFF_UNTIL = 8;
const SCRAPED_AT = 9;
const KV_CACHE = 10;
const WAITING = 22;
const RUNNING = 23;
const SENT = 24;
const GENERATION = 25;

/** The failure window of `allowed_fails` (LiteLLM's: one minute). */
export const FAILURE_WINDOW_MS = 60_000;
/** Weight of a new sample in the latency average: about the last five calls count. */
const EWMA_ALPHA = 0.3;

/** What `last_error.code` can be: a gateway error code (`rate_limited` for a provider 429). */
export type FailureCode = ErrorCode;
const FAILURE_CODES: readonly FailureCode[] = Object.keys(ERRORS) as ErrorCode[];
const CODE_INDEX = new Map<FailureCode, number>(FAILURE_CODES.map((code, i) => [code, i + 1]));

/** `switchyard_deployment_state` values, also the order of `DEPLOYMENT_STATES`. */
export const HEALTHY = 0;
export const HALF_OPEN = 1;
export const COOLING = 2;
export const DEPLOYMENT_STATES = ['healthy', 'half_open', 'cooling_down'] as const;
export type DeploymentStateName = (typeof DEPLOYMENT_STATES)[number];

/** A reservation's kind: refused, an ordinary call, or the one call let through a half-open deployment. */
export const REFUSED = 0;
export const RESERVED = 1;
export const TRIAL_RESERVED = 2;
export type Reservation = typeof REFUSED | typeof RESERVED | typeof TRIAL_RESERVED;

/** How a failure weighs on its deployment (the failure table of CONTRACT.md). */
export interface FailureRecord {
  readonly code: FailureCode;
  /** The provider's HTTP status, 0 when there was no answer. */
  readonly status: number;
  /** 429, 401, 403: cool at once rather than after `allowed_fails`. */
  readonly coolNow: boolean;
  /** How long a cooldown started now lasts. */
  readonly cooldownMs: number;
  readonly allowedFails: number;
  /** A group of one deployment and no fallbacks: recorded, never cooled. */
  readonly lone: boolean;
}

/** One deployment's state as /status shows it. */
export interface DeploymentSnapshot {
  readonly state: DeploymentStateName;
  readonly cooldownRemainingMs: number;
  readonly inFlight: number;
  readonly latencyEwmaMs: number | null;
  readonly failuresLastMinute: number;
  readonly lastError: { readonly code: FailureCode; readonly status: number; readonly at: string } | null;
  readonly cooldowns: number;
  /** Time left of the wait the provider asked for (Retry-After), 0 when none. */
  readonly backoffRemainingMs: number;
}

/** What a thread needs to open the shared state: the memory and its shape. */
export interface DeploymentStateMemory {
  readonly buffer: SharedArrayBuffer;
  readonly capacity: number;
  readonly workers: number;
}

/** Bytes for `capacity` slots and `workers` threads' shares. */
export function deploymentStateMemory(capacity: number, workers: number): DeploymentStateMemory {
  const w = Math.max(1, workers);
  return { buffer: new SharedArrayBuffer(capacity * SLOT_BYTES + capacity * w * 4), capacity, workers: w };
}

export class DeploymentStates {
  readonly capacity: number;
  readonly workers: number;
  readonly #i32: Int32Array;
  readonly #f64: Float64Array;
  /** Per-worker shares of in_flight: [worker * capacity + slot]. */
  readonly #shares: Int32Array;
  /** This thread's worker index (its share, and its mark on a trial it holds). */
  readonly #worker: number;

  constructor(memory: DeploymentStateMemory, worker: number) {
    this.capacity = memory.capacity;
    this.workers = memory.workers;
    this.#i32 = new Int32Array(memory.buffer, 0, memory.capacity * I32_PER_SLOT);
    this.#f64 = new Float64Array(memory.buffer, 0, memory.capacity * F64_PER_SLOT);
    this.#shares = new Int32Array(memory.buffer, memory.capacity * SLOT_BYTES, memory.capacity * memory.workers);
    this.#worker = worker;
  }

  inFlight(slot: number): number {
    return Atomics.load(this.#i32, slot * I32_PER_SLOT + IN_FLIGHT);
  }

  /** Latency average in ms; the sample count is read with `hasLatency`. */
  latency(slot: number): number {
    return this.#f64[slot * F64_PER_SLOT + EWMA] as number;
  }

  hasLatency(slot: number): boolean {
    return Atomics.load(this.#i32, slot * I32_PER_SLOT + SAMPLES) > 0;
  }

  /** HEALTHY, HALF_OPEN or COOLING at `now` (Date.now ms). */
  stateAt(slot: number, now: number): number {
    const until = this.#f64[slot * F64_PER_SLOT + COOLDOWN_UNTIL] as number;
    return until === 0 ? HEALTHY : now < until ? COOLING : HALF_OPEN;
  }

  /** Whether a pick may choose it now: not cooling, not backing off, its trial free if half-open, under its cap (0: none). */
  usable(slot: number, now: number, cap: number): boolean {
    if (now < (this.#f64[slot * F64_PER_SLOT + BACKOFF_UNTIL] as number)) return false;
    const until = this.#f64[slot * F64_PER_SLOT + COOLDOWN_UNTIL] as number;
    if (until !== 0 && (now < until || Atomics.load(this.#i32, slot * I32_PER_SLOT + TRIAL) !== 0)) return false;
    return cap === 0 || Atomics.load(this.#i32, slot * I32_PER_SLOT + IN_FLIGHT) < cap;
  }

  /** When its cooldown ends (Date.now ms), 0 when it is not cooled. */
  cooldownUntil(slot: number): number {
    return this.#f64[slot * F64_PER_SLOT + COOLDOWN_UNTIL] as number;
  }

  /** Until when no call may reach it (Date.now ms): the end of the wait its provider asked for; 0 or past when none. */
  backoffUntil(slot: number): number {
    return this.#f64[slot * F64_PER_SLOT + BACKOFF_UNTIL] as number;
  }

  /** The provider status (429, 503, …) of the answer that asked for the back-off under way. */
  backoffStatus(slot: number): number {
    return Atomics.load(this.#i32, slot * I32_PER_SLOT + BACKOFF_STATUS);
  }

  /**
   * The provider asked for a pause (Retry-After, retry-after-ms): no call reaches the deployment,
   * from any thread, before `until` (Date.now ms). A later end wins; a lone deployment backs off too.
   */
  backOff(slot: number, until: number, status: number): void {
    const f = slot * F64_PER_SLOT + BACKOFF_UNTIL;
    if (until <= (this.#f64[f] as number)) return;
    Atomics.store(this.#i32, slot * I32_PER_SLOT + BACKOFF_STATUS, status);
    this.#f64[f] = until;
  }

  /**
   * Takes one place in flight, never past `cap` (0: none), and a half-open
   * deployment's one trial; REFUSED when another thread took the last place
   * or the trial first. Every reservation is given back by `release`.
   */
  reserve(slot: number, now: number, cap: number): Reservation {
    const base = slot * I32_PER_SLOT;
    const i32 = this.#i32;
    let kind: Reservation = RESERVED;
    if (now < (this.#f64[slot * F64_PER_SLOT + BACKOFF_UNTIL] as number)) return REFUSED;
    const until = this.#f64[slot * F64_PER_SLOT + COOLDOWN_UNTIL] as number;
    if (until !== 0) {
      if (now < until || Atomics.compareExchange(i32, base + TRIAL, 0, this.#worker + 1) !== 0) return REFUSED;
      kind = TRIAL_RESERVED;
    }
    if (cap === 0) Atomics.add(i32, base + IN_FLIGHT, 1);
    else {
      for (;;) {
        const current = Atomics.load(i32, base + IN_FLIGHT);
        if (current >= cap) {
          if (kind === TRIAL_RESERVED) Atomics.store(i32, base + TRIAL, 0);
          return REFUSED;
        }
        if (Atomics.compareExchange(i32, base + IN_FLIGHT, current, current + 1) === current) break;
      }
    }
    Atomics.add(this.#shares, this.#worker * this.capacity + slot, 1);
    return kind;
  }

  /**
   * Gives back a reservation. A trial with no outcome (the client left) frees the trial for the next call.
   * Slot -1 (a route-rule target, which keeps no state: pick.ts reserves it without a slot) has nothing to give back.
   */
  release(slot: number, kind: Reservation): void {
    if (kind === REFUSED || slot < 0) return;
    Atomics.sub(this.#i32, slot * I32_PER_SLOT + IN_FLIGHT, 1);
    Atomics.sub(this.#shares, this.#worker * this.capacity + slot, 1);
    if (kind === TRIAL_RESERVED) Atomics.compareExchange(this.#i32, slot * I32_PER_SLOT + TRIAL, this.#worker + 1, 0);
  }

  /**
   * A call succeeded; `latencyMs` (time to headers, or to the first token
   * of a stream) joins the average. A half-open trial's success makes the
   * deployment healthy; any other success leaves a cooldown as it is.
   */
  succeed(slot: number, kind: Reservation, latencyMs: number): void {
    const base = slot * I32_PER_SLOT;
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    const samples = Atomics.add(this.#i32, base + SAMPLES, 1);
    f64[f + EWMA] = samples === 0 ? latencyMs : (f64[f + EWMA] as number) + EWMA_ALPHA * (latencyMs - (f64[f + EWMA] as number));
    if (kind === TRIAL_RESERVED) {
      f64[f + COOLDOWN_UNTIL] = 0;
      Atomics.store(this.#i32, base + FAILURES, 0);
    }
  }

  /** A call failed in a way that weighs on its deployment; returns whether this started a cooldown. */
  fail(slot: number, kind: Reservation, failure: FailureRecord, now: number): boolean {
    const base = slot * I32_PER_SLOT;
    const f = slot * F64_PER_SLOT;
    const i32 = this.#i32;
    const f64 = this.#f64;
    Atomics.store(i32, base + LAST_CODE, CODE_INDEX.get(failure.code) ?? 0);
    Atomics.store(i32, base + LAST_STATUS, failure.status);
    f64[f + LAST_AT] = now;
    if (now - (f64[f + WINDOW_START] as number) >= FAILURE_WINDOW_MS) {
      f64[f + WINDOW_START] = now;
      Atomics.store(i32, base + FAILURES, 0);
    }
    const failures = Atomics.add(i32, base + FAILURES, 1) + 1;
    if (failure.lone) return false;
    if (kind !== TRIAL_RESERVED && !failure.coolNow && failures < failure.allowedFails) return false;
    const until = f64[f + COOLDOWN_UNTIL] as number;
    const started = !(until > now);
    f64[f + COOLDOWN_UNTIL] = Math.max(until, now + failure.cooldownMs);
    if (started) Atomics.add(i32, base + COOLDOWNS, 1);
    return started;
  }

  // ── inference-aware routing (CONTRACT.md, Inference-aware routing: Signals) ──

  /**
   * The front's scraper read the server's /metrics (Date.now ms `at`): its figures replace the last, and
   * the count of calls sent since the scrape starts again from 0 (the server's own counts now hold them).
   * The time is written last: a reader that sees it fresh sees figures at least that recent.
   */
  scraped(slot: number, waiting: number, running: number, kvCache: number, at: number): void {
    const base = slot * I32_PER_SLOT;
    Atomics.store(this.#i32, base + WAITING, waiting);
    Atomics.store(this.#i32, base + RUNNING, running);
    this.#f64[slot * F64_PER_SLOT + KV_CACHE] = kvCache;
    Atomics.add(this.#i32, base + GENERATION, 1);
    Atomics.store(this.#i32, base + SENT, 0);
    this.#f64[slot * F64_PER_SLOT + SCRAPED_AT] = at;
  }

  /** When the last good scrape was read (Date.now ms); 0 when none was. */
  scrapedAt(slot: number): number {
    return this.#f64[slot * F64_PER_SLOT + SCRAPED_AT] as number;
  }

  waiting(slot: number): number {
    return Atomics.load(this.#i32, slot * I32_PER_SLOT + WAITING);
  }

  running(slot: number): number {
    return Atomics.load(this.#i32, slot * I32_PER_SLOT + RUNNING);
  }

  kvCache(slot: number): number {
    return this.#f64[slot * F64_PER_SLOT + KV_CACHE] as number;
  }

  /** This pod's calls sent to it since the last scrape and still in flight (never below 0). */
  sentSinceScrape(slot: number): number {
    return Math.max(0, Atomics.load(this.#i32, slot * I32_PER_SLOT + SENT));
  }

  /**
   * A call was sent to it (a reservation of a deployment with server_metrics): counted until it ends
   * or the next scrape, whichever is first. Returns the scrape generation to give to `sentDone`.
   * The generation is read before the count goes up, so a scrape in between over-counts one call
   * until the next scrape rather than under-counting it.
   */
  sent(slot: number): number {
    const base = slot * I32_PER_SLOT;
    const generation = Atomics.load(this.#i32, base + GENERATION);
    Atomics.add(this.#i32, base + SENT, 1);
    return generation;
  }

  /** The call `sent` counted ended: uncounted, unless a scrape since then started the count again. */
  sentDone(slot: number, generation: number): void {
    const base = slot * I32_PER_SLOT;
    if (Atomics.load(this.#i32, base + GENERATION) === generation) Atomics.sub(this.#i32, base + SENT, 1);
  }

  /** Cooldowns started since the slot was given its deployment (switchyard_cooldowns_total). */
  cooldowns(slot: number): number {
    return Atomics.load(this.#i32, slot * I32_PER_SLOT + COOLDOWNS);
  }

  snapshot(slot: number, now: number): DeploymentSnapshot {
    const base = slot * I32_PER_SLOT;
    const f = slot * F64_PER_SLOT;
    const i32 = this.#i32;
    const f64 = this.#f64;
    const state = this.stateAt(slot, now);
    const code = FAILURE_CODES[Atomics.load(i32, base + LAST_CODE) - 1];
    const windowStart = f64[f + WINDOW_START] as number;
    return {
      state: DEPLOYMENT_STATES[state] as DeploymentStateName,
      cooldownRemainingMs: state === COOLING ? Math.ceil((f64[f + COOLDOWN_UNTIL] as number) - now) : 0,
      inFlight: Atomics.load(i32, base + IN_FLIGHT),
      latencyEwmaMs: this.hasLatency(slot) ? (f64[f + EWMA] as number) : null,
      failuresLastMinute: now - windowStart < FAILURE_WINDOW_MS ? Atomics.load(i32, base + FAILURES) : 0,
      lastError: code === undefined ? null : { code, status: Atomics.load(i32, base + LAST_STATUS), at: new Date(f64[f + LAST_AT] as number).toISOString() },
      cooldowns: Atomics.load(i32, base + COOLDOWNS),
      backoffRemainingMs: Math.max(0, Math.ceil((f64[f + BACKOFF_UNTIL] as number) - now)),
    };
  }

  /**
   * Another pod cooled this deployment until `until` (Date.now ms), shared through Redis (src/shared-state/):
   * honoured as a cooldown of this pod's own, a later end winning; not counted among this pod's cooldowns.
   */
  coolUntil(slot: number, until: number): void {
    const f = slot * F64_PER_SLOT + COOLDOWN_UNTIL;
    if (until > (this.#f64[f] as number)) this.#f64[f] = until;
  }

  /** Ends a cooldown at once: a deployment that became the lone member of its group is never cooled. */
  forgive(slot: number): void {
    this.#f64[slot * F64_PER_SLOT + COOLDOWN_UNTIL] = 0;
  }

  /** A slot handed to a new deployment id starts from nothing. */
  clear(slot: number): void {
    // Through Atomics, field by field: another thread may still be giving back a place on it.
    for (let i = 0; i < I32_PER_SLOT; i++) Atomics.store(this.#i32, slot * I32_PER_SLOT + i, 0);
    this.#f64.fill(0, slot * F64_PER_SLOT + WINDOW_START, (slot + 1) * F64_PER_SLOT);
  }

  /** A worker died: what it held in flight, and any trial it held, are given back for it. */
  takeBack(worker: number): void {
    for (let slot = 0; slot < this.capacity; slot++) {
      const share = Atomics.exchange(this.#shares, worker * this.capacity + slot, 0);
      if (share !== 0) Atomics.sub(this.#i32, slot * I32_PER_SLOT + IN_FLIGHT, share);
      Atomics.compareExchange(this.#i32, slot * I32_PER_SLOT + TRIAL, worker + 1, 0);
    }
  }
}
