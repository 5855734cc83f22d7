/**
 * `rpm` and `tpm` per deployment, one view per pod (CONTRACT.md, Shared
 * state across pods): a SharedArrayBuffer the front makes beside the
 * deployment state (protocol/deployment-state.ts), keyed by the same slot
 * numbers, handed to every worker the same way (WorkerState).
 *
 * The window is a ring of B + 1 buckets of `window / B` each (B = 60: one
 * second of the minute). A call is admitted when the buckets of the last
 * B + 1 (a span of one window plus one bucket, which covers every window
 * that ends now) hold room for it; so over ANY window the admitted calls
 * and tokens stay within the limit, and a pod under steady demand uses
 * B / (B + 1) ≈ 98.4 % of it.
 *
 * Two modes, set by the front for the whole pod (the header):
 * - local: the ring admits, at the limit divided by `divisor` (1 without
 *   Redis; the pods last seen while Redis is lost);
 * - shared: the front draws the fleet's budget from Redis in slices into
 *   each slot's credit (src/shared-state/), and a call takes from the
 *   credit. With too little in hand and the last draw not saying the
 *   fleet's budget is spent, calls go on credit down to the overdraft the
 *   front allows (src/shared-state/budget.ts sizes it; a call's tokens may
 *   take it below by that one call): the contract's "serves on credit".
 *   The ring keeps counting in this mode too: it is what `limits used`
 *   shows, and what a pod that loses Redis goes on from.
 *
 * In shared mode, what a call does not use (a call never sent, tokens below
 * its estimate) is not put back in the credit: it waits in the slot, by the
 * bucket the call was admitted in, until the front gives it back to Redis;
 * tokens above the estimate come off the credit (the next draw covers them).
 *
 * Each slot has a lock (an Int32 taken by compare-and-swap, held for a
 * few dozen loads and stores, never across anything that can throw or
 * wait): a bucket's turn from one second to the next and the check and
 * the count must be one step, or two threads could both take the last
 * place. Inside the lock plain Float64 reads and writes are ordered by the
 * lock's atomics, so counts are exact and never overflow an Int32.
 */

/** Buckets per window: one second of the minute. */
export const BUCKETS = 60;
const RING = BUCKETS + 1;

// Per slot, Float64 fields:
const LAST = 0; // the newest bucket number the ring has turned to
const REQ_SUM = 1; // calls in the live buckets
const TOK_SUM = 2; // tokens in the live buckets
const REQ_CREDIT = 3; // shared mode: calls drawn and not yet used (below 0: served on credit)
const TOK_CREDIT = 4;
const SPENT_UNTIL = 5; // shared mode: the last draw said the fleet's budget is spent until then (Date.now ms)
const REQ_TOTAL = 6; // calls admitted since start (a counter for the metrics)
const TOK_TOTAL = 7; // tokens counted since start (estimates settled on usage)
const REFUSED_TOTAL = 8; // calls a limit kept from this deployment
const REQ_OVERDRAFT = 9; // shared mode: how far below 0 the credit may go while a draw is on its way (the front sets it)
const TOK_OVERDRAFT = 10;
const REQ_RING = 16;
const TOK_RING = REQ_RING + RING;
// Shared mode: what calls gave back (never sent, or used fewer tokens than their estimate), by the bucket they
// were admitted in; the front hands it to Redis, to that bucket (src/shared-state/budget.ts says why that bucket).
const REQ_REFUND = TOK_RING + RING;
const TOK_REFUND = REQ_REFUND + RING;
const F64_PER_SLOT = TOK_REFUND + RING + 3;

// Header, Int32:
const MODE = 0;
const DIVISOR = 1;
const HEADER_BYTES = 64;

export const LOCAL = 0;
export const SHARED = 1;
export type LimitMode = typeof LOCAL | typeof SHARED;

/** What a thread needs to open the limits: the memory and its number of slots. */
export interface DeploymentLimitsMemory {
  readonly buffer: SharedArrayBuffer;
  readonly capacity: number;
}

export function deploymentLimitsMemory(capacity: number): DeploymentLimitsMemory {
  const buffer = new SharedArrayBuffer(HEADER_BYTES + capacity * 4 + capacity * F64_PER_SLOT * 8 + 8);
  const limits = { buffer, capacity };
  Atomics.store(new Int32Array(buffer, 0, HEADER_BYTES / 4), DIVISOR, 1);
  return limits;
}

/** A deployment's limits as the config gives them (0: none). */
export interface Limits {
  readonly rpm: number;
  readonly tpm: number;
}

/**
 * What an admitted call took, to settle or give back: the bucket it was counted in, its token
 * estimate, and whether it took shared credit. Reused per request (no allocation per call).
 */
export interface LimitTicket {
  bucket: number;
  tokens: number;
  credit: boolean;
}

export const NO_BUCKET = -1;

/** The counters of one slot, for /status and the metrics. */
export interface LimitsSnapshot {
  /** Calls and tokens in the window now. */
  readonly requests: number;
  readonly tokens: number;
  readonly requestsTotal: number;
  readonly tokensTotal: number;
  readonly refusedTotal: number;
  readonly requestCredit: number;
  readonly tokenCredit: number;
}

export class DeploymentLimits {
  readonly capacity: number;
  readonly #header: Int32Array;
  readonly #locks: Int32Array;
  readonly #f64: Float64Array;

  constructor(memory: DeploymentLimitsMemory) {
    this.capacity = memory.capacity;
    this.#header = new Int32Array(memory.buffer, 0, HEADER_BYTES / 4);
    this.#locks = new Int32Array(memory.buffer, HEADER_BYTES, memory.capacity);
    // Float64 fields start on an 8-byte boundary after the locks.
    const at = Math.ceil((HEADER_BYTES + memory.capacity * 4) / 8) * 8;
    this.#f64 = new Float64Array(memory.buffer, at, memory.capacity * F64_PER_SLOT);
  }

  get mode(): LimitMode {
    return Atomics.load(this.#header, MODE) as LimitMode;
  }

  /** The pods the limit is divided by in local mode (1: the whole limit). */
  get divisor(): number {
    return Atomics.load(this.#header, DIVISOR);
  }

  /** The front: how the pod admits from now on. */
  setMode(mode: LimitMode, divisor: number): void {
    Atomics.store(this.#header, DIVISOR, Math.max(1, Math.floor(divisor)));
    Atomics.store(this.#header, MODE, mode);
  }

  /**
   * Admits one call of `tokens` (its estimate) at `now` when its limits have room, counting it;
   * false when a limit holds it. `ticket` is filled for `settle` / `giveBack`.
   */
  take(slot: number, limits: Limits, tokens: number, now: number, windowMs: number, ticket: LimitTicket): boolean {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    const bucket = Math.floor(now / (windowMs / BUCKETS));
    const shared = this.mode === SHARED;
    this.#lock(slot);
    this.#turn(f, bucket);
    let ok: boolean;
    if (shared) {
      ok = this.#creditRoom(f, limits, tokens, now);
      if (ok) {
        if (limits.rpm > 0) f64[f + REQ_CREDIT] = (f64[f + REQ_CREDIT] as number) - 1;
        if (limits.tpm > 0) f64[f + TOK_CREDIT] = (f64[f + TOK_CREDIT] as number) - tokens;
      }
    } else ok = this.#ringRoom(f, limits, tokens, this.divisor);
    if (ok) {
      const i = bucket % RING;
      f64[f + REQ_RING + i] = (f64[f + REQ_RING + i] as number) + 1;
      f64[f + TOK_RING + i] = (f64[f + TOK_RING + i] as number) + tokens;
      f64[f + REQ_SUM] = (f64[f + REQ_SUM] as number) + 1;
      f64[f + TOK_SUM] = (f64[f + TOK_SUM] as number) + tokens;
      f64[f + REQ_TOTAL] = (f64[f + REQ_TOTAL] as number) + 1;
      f64[f + TOK_TOTAL] = (f64[f + TOK_TOTAL] as number) + tokens;
    } else f64[f + REFUSED_TOTAL] = (f64[f + REFUSED_TOTAL] as number) + 1;
    this.#unlock(slot);
    ticket.bucket = ok ? bucket : NO_BUCKET;
    ticket.tokens = tokens;
    ticket.credit = ok && shared;
    return ok;
  }

  /** The call was answered: its tokens are what the provider's usage says (`used`), not the estimate. */
  settle(slot: number, ticket: LimitTicket, used: number, now: number, windowMs: number): void {
    if (ticket.bucket === NO_BUCKET) return;
    this.#adjust(slot, ticket, 0, used - ticket.tokens, now, windowMs);
    ticket.bucket = NO_BUCKET;
  }

  /** The call was never sent: its place and its tokens go back. */
  giveBack(slot: number, ticket: LimitTicket, now: number, windowMs: number): void {
    if (ticket.bucket === NO_BUCKET) return;
    this.#adjust(slot, ticket, -1, -ticket.tokens, now, windowMs);
    ticket.bucket = NO_BUCKET;
  }

  /**
   * How long until a call of `tokens` would fit (ms, 0: it fits now): what Retry-After says. In
   * shared mode, until the spent fleet budget's next draw may succeed.
   */
  waitMs(slot: number, limits: Limits, tokens: number, now: number, windowMs: number): number {
    const f = slot * F64_PER_SLOT;
    const width = windowMs / BUCKETS;
    const bucket = Math.floor(now / width);
    this.#lock(slot);
    this.#turn(f, bucket);
    let wait: number;
    if (this.mode === SHARED) wait = this.#creditRoom(f, limits, tokens, now) ? 0 : Math.max((this.#f64[f + SPENT_UNTIL] as number) - now, width);
    else {
      const divisor = this.divisor;
      const requests = limits.rpm > 0 ? this.#freedAfter(f, REQ_RING, (this.#f64[f + REQ_SUM] as number) + 1 - share(limits.rpm, divisor), bucket) : 0;
      const sum = this.#f64[f + TOK_SUM] as number;
      const room = share(limits.tpm, divisor);
      // A call larger than the whole limit waits for an empty window (ringRoom admits it alone).
      const deficit = tokens > room ? sum : sum + tokens - room;
      const tokenWait = limits.tpm > 0 ? this.#freedAfter(f, TOK_RING, deficit, bucket) : 0;
      wait = Math.max(requests, tokenWait) === 0 ? 0 : Math.max(requests, tokenWait) * width - (now - bucket * width);
    }
    this.#unlock(slot);
    return Math.max(0, wait);
  }

  // ── the front's side (shared mode): credit drawn from and given back to the fleet ──

  /** Adds what a draw granted (calls, tokens); `spentUntil` > now when the fleet had less than was asked. */
  credit(slot: number, requests: number, tokens: number, spentUntil: number): void {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    this.#lock(slot);
    f64[f + REQ_CREDIT] = (f64[f + REQ_CREDIT] as number) + requests;
    f64[f + TOK_CREDIT] = (f64[f + TOK_CREDIT] as number) + tokens;
    f64[f + SPENT_UNTIL] = spentUntil;
    this.#unlock(slot);
  }

  /** The pod changes mode: the shared credit (and what waits to go back to Redis) starts from nothing. */
  resetCredit(slot: number): void {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    this.#lock(slot);
    f64[f + REQ_CREDIT] = 0;
    f64[f + TOK_CREDIT] = 0;
    f64[f + SPENT_UNTIL] = 0;
    f64[f + REQ_OVERDRAFT] = 0;
    f64[f + TOK_OVERDRAFT] = 0;
    f64.fill(0, f + REQ_REFUND, f + TOK_REFUND + RING);
    this.#unlock(slot);
  }

  /** What was admitted in each bucket since `from` (a bucket number), for Redis when it comes back: `each(bucket, calls, tokens)`. */
  countsSince(slot: number, from: number, now: number, windowMs: number, each: (bucket: number, requests: number, tokens: number) => void): void {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    const bucket = Math.floor(now / (windowMs / BUCKETS));
    const found: number[] = [];
    this.#lock(slot);
    this.#turn(f, bucket);
    for (let b = Math.max(from, bucket - BUCKETS); b <= bucket; b++) {
      const r = f64[f + REQ_RING + (b % RING)] as number;
      const t = f64[f + TOK_RING + (b % RING)] as number;
      if (r !== 0 || t !== 0) found.push(b, r, t);
    }
    this.#unlock(slot);
    for (let k = 0; k < found.length; k += 3) each(found[k] as number, found[k + 1] as number, found[k + 2] as number);
  }

  /** How far below 0 the credit may go while a draw is on its way (the front's sizing: src/shared-state/budget.ts). */
  setOverdraft(slot: number, requests: number, tokens: number): void {
    const f = slot * F64_PER_SLOT;
    this.#lock(slot);
    this.#f64[f + REQ_OVERDRAFT] = requests;
    this.#f64[f + TOK_OVERDRAFT] = tokens;
    this.#unlock(slot);
  }

  /** Takes back up to `requests` calls and `tokens` of unused credit (never below 0); returns what it took. */
  reclaim(slot: number, requests: number, tokens: number, out: { requests: number; tokens: number }): void {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    this.#lock(slot);
    const r = Math.max(0, Math.min(requests, f64[f + REQ_CREDIT] as number));
    const t = Math.max(0, Math.min(tokens, f64[f + TOK_CREDIT] as number));
    f64[f + REQ_CREDIT] = (f64[f + REQ_CREDIT] as number) - r;
    f64[f + TOK_CREDIT] = (f64[f + TOK_CREDIT] as number) - t;
    this.#unlock(slot);
    out.requests = r;
    out.tokens = t;
  }

  /**
   * Hands over what calls gave back since the last time, bucket by bucket (`give(bucket, requests, tokens)`),
   * and forgets it: the front sends it to Redis.
   */
  drainRefunds(slot: number, now: number, windowMs: number, give: (bucket: number, requests: number, tokens: number) => void): void {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    const bucket = Math.floor(now / (windowMs / BUCKETS));
    this.#lock(slot);
    this.#turn(f, bucket);
    let found: number[] | null = null;
    for (let b = bucket - BUCKETS; b <= bucket; b++) {
      const i = b % RING;
      const r = f64[f + REQ_REFUND + i] as number;
      const t = f64[f + TOK_REFUND + i] as number;
      if (r === 0 && t === 0) continue;
      (found ??= []).push(b, r, t);
      f64[f + REQ_REFUND + i] = 0;
      f64[f + TOK_REFUND + i] = 0;
    }
    this.#unlock(slot);
    // Called outside the lock: `give` may do anything.
    if (found !== null) for (let k = 0; k < found.length; k += 3) give(found[k] as number, found[k + 1] as number, found[k + 2] as number);
  }

  /** The credit in hand (below 0: served on credit, to be covered by the next draw). */
  requestCredit(slot: number): number {
    return this.#read(slot, REQ_CREDIT);
  }

  tokenCredit(slot: number): number {
    return this.#read(slot, TOK_CREDIT);
  }

  /** Counters since start: calls admitted, tokens counted. */
  totals(slot: number): { requests: number; tokens: number } {
    return { requests: this.#read(slot, REQ_TOTAL), tokens: this.#read(slot, TOK_TOTAL) };
  }

  snapshot(slot: number, now: number, windowMs: number): LimitsSnapshot {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    this.#lock(slot);
    this.#turn(f, Math.floor(now / (windowMs / BUCKETS)));
    const out: LimitsSnapshot = {
      requests: f64[f + REQ_SUM] as number,
      tokens: f64[f + TOK_SUM] as number,
      requestsTotal: f64[f + REQ_TOTAL] as number,
      tokensTotal: f64[f + TOK_TOTAL] as number,
      refusedTotal: f64[f + REFUSED_TOTAL] as number,
      requestCredit: f64[f + REQ_CREDIT] as number,
      tokenCredit: f64[f + TOK_CREDIT] as number,
    };
    this.#unlock(slot);
    return out;
  }

  /** A slot handed to a new deployment id starts from nothing. */
  clear(slot: number): void {
    this.#lock(slot);
    this.#f64.fill(0, slot * F64_PER_SLOT, (slot + 1) * F64_PER_SLOT);
    this.#unlock(slot);
  }

  #read(slot: number, field: number): number {
    this.#lock(slot);
    const value = this.#f64[slot * F64_PER_SLOT + field] as number;
    this.#unlock(slot);
    return value;
  }

  #ringRoom(f: number, limits: Limits, tokens: number, divisor: number): boolean {
    const f64 = this.#f64;
    if (limits.rpm > 0 && (f64[f + REQ_SUM] as number) + 1 > share(limits.rpm, divisor)) return false;
    if (limits.tpm === 0) return true;
    const sum = f64[f + TOK_SUM] as number;
    // A call whose estimate alone is over the limit is let through an empty window, never refused for ever.
    return sum + tokens <= share(limits.tpm, divisor) || sum === 0;
  }

  #creditRoom(f: number, limits: Limits, tokens: number, now: number): boolean {
    const f64 = this.#f64;
    const requests = f64[f + REQ_CREDIT] as number;
    const credit = f64[f + TOK_CREDIT] as number;
    const haveRequest = limits.rpm === 0 || requests >= 1;
    const haveTokens = limits.tpm === 0 || credit >= tokens;
    if (haveRequest && haveTokens) return true;
    // Not enough in hand: on credit while a draw is on its way, down to the overdraft, unless the fleet is spent.
    if (now < (f64[f + SPENT_UNTIL] as number)) return false;
    const requestOverdraft = f64[f + REQ_OVERDRAFT] as number;
    const tokenOverdraft = f64[f + TOK_OVERDRAFT] as number;
    const requestsOk = haveRequest || requests - 1 >= -requestOverdraft;
    // A call larger than the overdraft still goes when nothing is owed: one call's estimate beyond it, at most.
    const tokensOk = haveTokens || (tokenOverdraft > 0 && (credit - tokens >= -tokenOverdraft || credit >= 0));
    return requestsOk && tokensOk;
  }

  /** Turns the ring to `bucket`: buckets that left the window are emptied and leave the sums. */
  #turn(f: number, bucket: number): void {
    const f64 = this.#f64;
    const last = f64[f + LAST] as number;
    if (bucket <= last) return;
    if (bucket - last >= RING) {
      f64.fill(0, f + REQ_RING, f + REQ_RING + 4 * RING);
      f64[f + REQ_SUM] = 0;
      f64[f + TOK_SUM] = 0;
    } else {
      for (let b = last + 1; b <= bucket; b++) {
        const i = b % RING;
        f64[f + REQ_SUM] = (f64[f + REQ_SUM] as number) - (f64[f + REQ_RING + i] as number);
        f64[f + TOK_SUM] = (f64[f + TOK_SUM] as number) - (f64[f + TOK_RING + i] as number);
        f64[f + REQ_RING + i] = 0;
        f64[f + TOK_RING + i] = 0;
        f64[f + REQ_REFUND + i] = 0;
        f64[f + TOK_REFUND + i] = 0;
      }
    }
    f64[f + LAST] = bucket;
  }

  /** How many bucket turns until the oldest buckets free `deficit` (0 when none is needed). */
  #freedAfter(f: number, ring: number, deficit: number, bucket: number): number {
    if (deficit <= 0) return 0;
    let freed = 0;
    for (let j = 0; j < RING; j++) {
      freed += this.#f64[f + ring + ((bucket - BUCKETS + j) % RING)] as number;
      // Bucket (bucket - B + j) leaves the window when the ring turns to bucket + j + 1.
      if (freed >= deficit) return j + 1;
    }
    return RING;
  }

  #adjust(slot: number, ticket: LimitTicket, requests: number, tokens: number, now: number, windowMs: number): void {
    const f = slot * F64_PER_SLOT;
    const f64 = this.#f64;
    const bucket = Math.floor(now / (windowMs / BUCKETS));
    this.#lock(slot);
    this.#turn(f, bucket);
    // Counted where the call was admitted while that bucket is in the window; more tokens than estimated
    // after it left count now, fewer are moot.
    const live = ticket.bucket > bucket - RING;
    const at = live ? ticket.bucket % RING : bucket % RING;
    const addTokens = live || tokens > 0 ? tokens : 0;
    const addRequests = live ? requests : 0;
    f64[f + REQ_RING + at] = (f64[f + REQ_RING + at] as number) + addRequests;
    f64[f + TOK_RING + at] = (f64[f + TOK_RING + at] as number) + addTokens;
    f64[f + REQ_SUM] = (f64[f + REQ_SUM] as number) + addRequests;
    f64[f + TOK_SUM] = (f64[f + TOK_SUM] as number) + addTokens;
    f64[f + REQ_TOTAL] = (f64[f + REQ_TOTAL] as number) + requests;
    f64[f + TOK_TOTAL] = (f64[f + TOK_TOTAL] as number) + tokens;
    if (ticket.credit) {
      // Shared credit: what was not used goes back to the fleet, to the bucket the call was counted in (dropped once
      // that bucket left the window: it no longer counts anywhere); what was used beyond the estimate is owed.
      if (live) {
        f64[f + REQ_REFUND + at] = (f64[f + REQ_REFUND + at] as number) - requests;
        if (tokens < 0) f64[f + TOK_REFUND + at] = (f64[f + TOK_REFUND + at] as number) - tokens;
      }
      if (tokens > 0) f64[f + TOK_CREDIT] = (f64[f + TOK_CREDIT] as number) - tokens;
    }
    this.#unlock(slot);
  }

  #lock(slot: number): void {
    // Held for a few dozen loads and stores: a spin, never a wait (the inline session runs on the front thread).
    while (Atomics.compareExchange(this.#locks, slot, 0, 1) !== 0);
  }

  #unlock(slot: number): void {
    Atomics.store(this.#locks, slot, 0);
  }
}

/** A pod's share of a limit: the limit divided by the pods, at least one call. */
function share(limit: number, divisor: number): number {
  return divisor === 1 ? limit : Math.max(1, Math.floor(limit / divisor));
}
