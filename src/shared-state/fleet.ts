/**
 * The pod's link to the fleet through Redis (CONTRACT.md, Shared state
 * across pods), on the front thread only: workers never talk to Redis and
 * no request waits on it. Loaded (with the Redis client) only when the
 * config has a redis_url: src/gateway.ts imports this module then.
 *
 * What runs, each on a timer of its own, none on the request path:
 * - the budget (every TICK_MS): for each deployment with rpm/tpm, what the
 *   workers used since the last look, a draw (one DRAW script) when the
 *   credit in hand is below half a slice, and in one ADD script what lots
 *   that expired give back, with what calls did not use (sent once a
 *   bucket: at the minute's window, once a second);
 * - cooldowns (every COOLDOWN_POLL_MS): a cooldown or a provider back-off
 *   this pod's workers started is written (COOL), and those the other pods
 *   wrote are read and put in the shared deployment state;
 * - health (every PING_MS): one REGISTER script, which marks this pod seen
 *   and counts the pods, timed as the ping (in a Redis Cluster, with a PING
 *   to every other master beside it), and reads Redis' clock. Redis is lost when the
 *   connection drops or three pings in a row took over 50 ms:
 *   the workers then admit on their own, at the limit ÷ the pods last seen
 *   (the whole limit if Redis was never reached), and come back to the
 *   fleet's budget once a ping is quick again.
 *
 * The fleet's clock is Redis': buckets, lots and the cooldowns' ends go to
 * Redis in its time, this pod's clock corrected by the offset the last quick
 * ping measured (to within half its round trip). Named by each pod's own
 * clock, a pod 0.5 s ahead of the others saw the window free up 0.5 s
 * early, every time: a fleet spending its budget in bursts spent it twice
 * in one window. The workers keep the pod's clock; what they count is moved
 * into the fleet's time here, never to a later bucket than its own for what
 * goes back, never to an earlier one for what is added.
 *
 * Every Redis command has a short timeout; the client's offline queue is
 * off, so a command while disconnected fails at once instead of waiting.
 * A pod sends about a dozen commands a second whatever its traffic: each
 * one costs the pod more CPU than a call does (the client's encoding, its
 * timeout, a socket write), so nothing here is sent per tick that could
 * wait for the next bucket.
 */
import { randomBytes } from 'node:crypto';
import type * as NodeRedis from '@redis/client';
import type { Logger } from 'pino';
import type { RoutingConfig } from '../../protocol/config.js';
import { LOCAL, SHARED, BUCKETS, type DeploymentLimits } from '../../protocol/deployment-limits.js';
import type { DeploymentStates } from '../../protocol/deployment-state.js';
import { groupsOf } from '../../protocol/routing-groups.js';
import type { SharedStateConfig } from '../config/shared-state.js';
import { Budget, shareOf } from './budget.js';
import { openRedisLink, type RedisLink } from './redis-link.js';
import { ADD, COOL, COOLDOWNS_KEY, DRAW, PODS_KEY, REGISTER, WINDOW_BUCKETS, windowKey } from './scripts.js';

export const TICK_MS = 25;
export const PING_MS = 200;
export const COOLDOWN_POLL_MS = 250;
/** A ping slower than this is a strike; three in a row and Redis counts as lost (CONTRACT.md). */
export const SLOW_PING_MS = 50;
const STRIKES = 3;
/** Timeouts: connecting, a command, a draw. */
const CONNECT_TIMEOUT_MS = 500;
const COMMAND_TIMEOUT_MS = 250;
const DRAW_TIMEOUT_MS = 200;
/** A pod not seen for this long is no longer counted among the pods. */
const POD_TTL_MS = 5_000;
/** Lots a pod holds longer than this many buckets go back to the fleet. */
const LOT_TTL_BUCKETS = 2;

export type SharedStateName = 'ok' | 'degraded' | 'off';
export const SHARED_STATE_NAMES: readonly SharedStateName[] = ['ok', 'degraded', 'off'];

/** What /status and the metrics read. */
export interface SharedStateView {
  readonly state: SharedStateName;
  /** Draws answered (granted in full or not), and draws that failed (timeout, Redis gone). */
  readonly draws: { readonly ok: number; readonly short: number; readonly failed: number };
  /** The pods Redis last counted (1 before it was reached). */
  readonly pods: number;
  /** Redis' clock less this pod's (ms), by which the pod names the fleet's buckets; 0 before a quick ping. */
  readonly clockOffsetMs: number;
}

interface Books {
  readonly slot: number;
  readonly requests: Budget;
  readonly tokens: Budget;
  nextDrawAt: number;
  /** The bucket in which what calls did not use was last sent back. */
  refundedIn: number;
}

export interface SharedStateDeps {
  readonly config: SharedStateConfig;
  readonly limits: DeploymentLimits;
  readonly states: DeploymentStates;
  /** The config in force (a reload swaps it). */
  readonly routing: () => RoutingConfig;
  readonly log: Logger;
  /** Date.now, the clock the workers' buckets use. */
  readonly now?: () => number;
}

export class SharedState implements SharedStateView {
  state: SharedStateName = 'degraded';
  readonly draws = { ok: 0, short: 0, failed: 0 };
  pods = 1;
  readonly #deps: SharedStateDeps;
  readonly #link: RedisLink;
  readonly #pod = `${process.pid}-${randomBytes(6).toString('hex')}`;
  readonly #now: () => number;
  /** The fleet's clock (Redis') less this pod's, ms, as the last quick ping measured it; 0 before one. */
  clockOffsetMs = 0;
  readonly #books = new Map<string, Books>();
  /** The config the books were last pruned for. */
  #booked: RoutingConfig | null = null;
  readonly #shas = new Map<string, string>();
  readonly #timers: NodeJS.Timeout[] = [];
  /** Redis was reached at least once: a lost Redis then divides the limit by the pods last seen. */
  #reached = false;
  #strikes = 0;
  #pinging = false;
  #polling = false;
  /** The bucket from which this pod admitted alone (Redis lost), to be added to the fleet's window when Redis is back. */
  #aloneFrom: number | null = null;
  /** Cooldown and back-off ends this pod last wrote or read, per deployment id: only a later one is written. */
  readonly #published = new Map<string, string>();
  #closed = false;

  private constructor(deps: SharedStateDeps, redis: typeof NodeRedis) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    const { limits, log } = deps;
    limits.setMode(LOCAL, 1);
    this.#aloneFrom = this.#bucket();
    log.warn({ event: 'shared_state', state: 'degraded', redis: deps.config.shownUrl, reason: 'not reached yet' }, 'shared state: Redis not reached yet; limits per pod (the whole limit) meanwhile');
    // The client reconnects by itself; its trouble is news only when it changes the state (#lose).
    this.#link = openRedisLink(redis, { url: deps.config.url, connectTimeoutMs: CONNECT_TIMEOUT_MS, onTrouble: (reason) => this.#lose(reason) });
  }

  /** Starts the link; never waits for Redis (the pod serves on its own until Redis answers). */
  static async start(deps: SharedStateDeps): Promise<SharedState> {
    // node-redis' core client, loaded here only: a pod without redis_url never loads it (test/module-graph.test.ts).
    const shared = new SharedState(deps, await import('@redis/client'));
    shared.#begin();
    return shared;
  }

  #begin(): void {
    this.#timers.push(setInterval(() => this.#tick(), TICK_MS));
    this.#timers.push(setInterval(() => void this.#ping(), PING_MS));
    this.#timers.push(setInterval(() => void this.#pollCooldowns(), COOLDOWN_POLL_MS));
    for (const t of this.#timers) t.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    // What this pod holds goes back to the fleet if Redis answers at once; if not, the window forgets it.
    if (this.state === 'ok') await Promise.race([this.#giveAllBack(), new Promise((resolve) => setTimeout(resolve, COMMAND_TIMEOUT_MS).unref())]);
    this.#link.destroy();
  }

  // ── health ──

  async #ping(): Promise<void> {
    if (this.#pinging || this.#closed) return;
    this.#pinging = true;
    const started = performance.now();
    try {
      if (!this.#link.isReady) throw new Error('not connected');
      await this.#link.settle(COMMAND_TIMEOUT_MS);
      const sent = this.#now();
      const register = this.#eval<[number, string, string]>(REGISTER, PODS_KEY, [this.#pod, String(POD_TTL_MS)], COMMAND_TIMEOUT_MS).then((reply) => ({ reply, back: this.#now() }));
      const [{ reply, back }] = await Promise.all([register, this.#link.pingMasters(COMMAND_TIMEOUT_MS)]);
      const ms = performance.now() - started;
      const [pods, seconds, micros] = reply;
      // Redis read its clock somewhere in the round trip: its middle is off by half the trip at most.
      if (back - sent <= SLOW_PING_MS) this.clockOffsetMs = Number(seconds) * 1000 + Number(micros) / 1000 - (sent + back) / 2;
      this.pods = Math.max(1, Number(pods));
      this.#reached = true;
      this.#strikes = ms > SLOW_PING_MS ? this.#strikes + 1 : 0;
      if (this.#strikes >= STRIKES) this.#lose(`${STRIKES} pings in a row over ${SLOW_PING_MS} ms (last ${Math.round(ms)} ms)`);
      else if (this.#strikes === 0 && this.state !== 'ok') await this.#recover();
    } catch (err) {
      this.#lose(`ping: ${(err as Error).message}`);
    } finally {
      this.#pinging = false;
    }
  }

  /** Redis answers quickly again: what this pod sent alone joins the fleet's window, and the fleet's budget is drawn again. */
  async #recover(): Promise<void> {
    const { limits, log } = this.#deps;
    const from = this.#aloneFrom;
    const now = this.#now();
    const windowMs = this.#windowMs();
    // What the workers counted, in buckets of this pod's clock, goes to a bucket of the fleet's no earlier than its own.
    const later = this.#offsetBuckets(Math.ceil);
    for (const [id, slot] of this.#limited()) {
      if (from === null) continue;
      const args: string[] = [String(this.#bucket(now + this.clockOffsetMs)), String(WINDOW_BUCKETS)];
      limits.countsSince(slot, from, now, windowMs, (bucket, requests, tokens) => args.push(String(bucket + later), String(Math.round(requests)), String(Math.round(tokens))));
      if (args.length > 2) await this.#eval(ADD, windowKey(id), args, COMMAND_TIMEOUT_MS);
    }
    this.#aloneFrom = null;
    this.#books.clear();
    for (const [, slot] of this.#limited()) limits.resetCredit(slot);
    this.#strikes = 0;
    this.state = 'ok';
    // The books and overdrafts first, then the mode: no call finds the shared mode before it may go on credit.
    this.#tick();
    limits.setMode(SHARED, 1);
    log.info({ event: 'shared_state', state: 'ok', redis: this.#deps.config.shownUrl, pods: this.pods }, `shared state: Redis reached; limits shared by ${this.pods} pod(s)`);
  }

  #lose(reason: string): void {
    if (this.#closed) return;
    this.#strikes = 0;
    if (this.state !== 'ok') return;
    const { limits, log } = this.#deps;
    const divisor = this.#reached ? this.pods : 1;
    limits.setMode(LOCAL, divisor);
    this.#aloneFrom = this.#bucket();
    this.#books.clear();
    this.state = 'degraded';
    log.warn({ event: 'shared_state', state: 'degraded', redis: this.#deps.config.shownUrl, reason, pods: divisor }, `shared state: Redis lost (${reason}); limits per pod at 1/${divisor} of each`);
  }

  // ── the budget ──

  #tick(): void {
    if (this.state !== 'ok' || this.#closed) return;
    try {
      this.#budget();
    } catch (err) {
      // A bug here must not stop the timer: the pods' limits then hold as they are.
      this.#deps.log.error({ event: 'shared_state_error', err: (err as Error).message }, 'shared state: the budget tick failed');
    }
  }

  #budget(): void {
    const { limits } = this.#deps;
    const routing = this.#deps.routing();
    const local = this.#now();
    const now = local + this.clockOffsetMs;
    const windowMs = routing.router.limitWindowMs;
    const width = windowMs / BUCKETS;
    const bucket = Math.floor(now / width);
    const earlier = this.#offsetBuckets(Math.floor);
    // A reload that dropped a deployment (or its limits): its books go (what it held stays in Redis' window until it ages out).
    if (routing !== this.#booked && this.#books.size > 0) {
      const kept = new Set(routing.aliases.filter((route) => route.rpm > 0 || route.tpm > 0).map((route) => route.id));
      for (const id of this.#books.keys()) if (!kept.has(id)) this.#books.delete(id);
    }
    this.#booked = routing;
    routing.aliases.forEach((route, i) => {
      if (route.rpm === 0 && route.tpm === 0) return;
      const slot = routing.slots[i] as number;
      let books = this.#books.get(route.id);
      if (books === undefined || books.slot !== slot) {
        limits.resetCredit(slot);
        books = { slot, requests: new Budget(), tokens: new Budget(), nextDrawAt: 0, refundedIn: bucket };
        this.#books.set(route.id, books);
      }
      // What goes back to the fleet this tick: [bucket, calls, tokens]… for one ADD. What calls did not use waits
      // for the bucket to turn (a bucket late at most: the fleet then sees a little less room, never more).
      const back: string[] = [];
      if (books.refundedIn !== bucket) {
        books.refundedIn = bucket;
        limits.drainRefunds(slot, local, windowMs, givingBack(back, earlier));
      }
      books.requests.observe(limits.requestCredit(slot));
      books.tokens.observe(limits.tokenCredit(slot));
      this.#expire(books, now, LOT_TTL_BUCKETS * width, back);
      if (back.length > 0) void this.#add(route.id, bucket, back).catch(() => undefined);
      const requestShare = shareOf(route.rpm, this.pods);
      const tokenShare = shareOf(route.tpm, this.pods);
      limits.setOverdraft(slot, route.rpm > 0 ? requestShare.overdraft : 0, route.tpm > 0 ? tokenShare.overdraft : 0);
      const wantRequests = route.rpm > 0 ? books.requests.want(requestShare.slice) : 0;
      const wantTokens = route.tpm > 0 ? books.tokens.want(tokenShare.slice) : 0;
      if ((wantRequests > 0 || wantTokens > 0) && now >= books.nextDrawAt) void this.#draw(route.id, route.rpm, route.tpm, books, wantRequests, wantTokens, bucket, width, now, local);
    });
  }

  /** `now` is the fleet's time, `local` the same instant by this pod's clock (the workers'). */
  async #draw(id: string, rpm: number, tpm: number, books: Books, wantRequests: number, wantTokens: number, bucket: number, width: number, now: number, local: number): Promise<void> {
    books.requests.drawing = true;
    books.tokens.drawing = true;
    try {
      const reply = await this.#eval<[number, number, number]>(DRAW, windowKey(id), [String(bucket), String(WINDOW_BUCKETS), String(wantRequests), String(wantTokens), String(rpm), String(tpm), String(width), String(now)], DRAW_TIMEOUT_MS);
      const [requests, tokens, wait] = reply.map(Number) as [number, number, number];
      if (this.#books.get(id) !== books || this.state !== 'ok') return;
      const spentUntil = wait > 0 ? local + wait : 0;
      this.#deps.limits.credit(books.slot, requests, tokens, spentUntil);
      books.requests.granted(bucket, now, requests);
      books.tokens.granted(bucket, now, tokens);
      // Short: the fleet's budget is spent; asking again before a bucket turns would only be refused.
      books.nextDrawAt = wait > 0 ? now + Math.min(wait, width) : 0;
      if (wait > 0) this.draws.short++;
      else this.draws.ok++;
    } catch {
      // A draw that timed out may have been counted in Redis and never reach us: the fleet loses that slice
      // until its bucket leaves the window, never more than allowed. The pings decide whether Redis is lost.
      this.draws.failed++;
    } finally {
      books.requests.drawing = false;
      books.tokens.drawing = false;
    }
  }

  /** Lots held too long are taken back from the workers' credit, to go back to the bucket each was drawn in (pushed on `back`). */
  #expire(books: Books, now: number, ttl: number, back: string[]): void {
    const { limits } = this.#deps;
    const requests = books.requests.expired(now, ttl);
    const tokens = books.tokens.expired(now, ttl);
    if (requests.length === 0 && tokens.length === 0) return;
    const out = { requests: 0, tokens: 0 };
    for (const lot of requests) {
      limits.reclaim(books.slot, lot.remaining, 0, out);
      books.requests.returned(lot, out.requests);
      if (out.requests > 0) back.push(String(lot.bucket), String(-Math.round(out.requests)), '0');
    }
    for (const lot of tokens) {
      limits.reclaim(books.slot, 0, lot.remaining, out);
      books.tokens.returned(lot, out.tokens);
      if (out.tokens > 0) back.push(String(lot.bucket), '0', String(-Math.round(out.tokens)));
    }
  }

  /** One ADD: `triples` ([bucket, calls, tokens]…, signed) into the deployment's window. */
  #add(id: string, bucket: number, triples: readonly string[]): Promise<unknown> {
    return this.#eval(ADD, windowKey(id), [String(bucket), String(WINDOW_BUCKETS), ...triples], COMMAND_TIMEOUT_MS);
  }

  async #giveAllBack(): Promise<void> {
    const local = this.#now();
    const bucket = this.#bucket(local + this.clockOffsetMs);
    const earlier = this.#offsetBuckets(Math.floor);
    const sends: Array<Promise<unknown>> = [];
    for (const [id, books] of this.#books) {
      books.requests.observe(this.#deps.limits.requestCredit(books.slot));
      books.tokens.observe(this.#deps.limits.tokenCredit(books.slot));
      const back: string[] = [];
      this.#deps.limits.drainRefunds(books.slot, local, this.#windowMs(), givingBack(back, earlier));
      this.#expire(books, Infinity, 0, back);
      if (back.length > 0) sends.push(this.#add(id, bucket, back));
    }
    await Promise.allSettled(sends);
  }

  // ── cooldowns ──

  /** Writes this pod's new cooldowns and back-offs, then reads everyone's into the shared deployment state. */
  async #pollCooldowns(): Promise<void> {
    if (this.state !== 'ok' || this.#polling || this.#closed) return;
    this.#polling = true;
    try {
      const { states } = this.#deps;
      const routing = this.#deps.routing();
      const now = this.#now();
      const offset = Math.round(this.clockOffsetMs);
      const toFleet = (ms: number) => (ms > now ? ms + offset : 0);
      const toLocal = (ms: number) => (ms > 0 ? ms - offset : 0);
      const lone = new Set<number>();
      for (const group of groupsOf(routing).values()) if (group.lone) lone.add(group.slots[0] as number);
      const bySlot = new Map<string, number>();
      routing.aliases.forEach((route, i) => bySlot.set(route.id, routing.slots[i] as number));
      for (const [id, slot] of bySlot) {
        const cooldown = Math.floor(states.cooldownUntil(slot));
        const backoff = Math.floor(states.backoffUntil(slot));
        if (cooldown <= now && backoff <= now) continue;
        const mine = `${cooldown}:${backoff}:${states.backoffStatus(slot)}`;
        if (this.#published.get(id) === mine) continue;
        this.#published.set(id, mine);
        // In Redis, ends are in the fleet's time; an end already past (0) stays 0.
        await this.#eval(COOL, COOLDOWNS_KEY, [id, String(toFleet(cooldown)), String(toFleet(backoff)), String(states.backoffStatus(slot)), String(now + offset)], COMMAND_TIMEOUT_MS);
      }
      const all = await this.#link.send<string[] | Record<string, string>>(COOLDOWNS_KEY, ['HGETALL', COOLDOWNS_KEY], COMMAND_TIMEOUT_MS);
      const entries = Array.isArray(all) ? pairs(all) : Object.entries(all);
      for (const [id, value] of entries) {
        const slot = bySlot.get(id);
        const m = /^(\d+):(\d+):(\d+)$/.exec(value);
        if (slot === undefined || m === null) continue;
        const [cooldown, backoff, status] = [toLocal(Number(m[1])), toLocal(Number(m[2])), Number(m[3])];
        // A lone deployment is never cooled (CONTRACT.md); its provider's back-off holds it all the same.
        if (cooldown > now && !lone.has(slot) && cooldown > states.cooldownUntil(slot)) states.coolUntil(slot, cooldown);
        if (backoff > now && backoff > states.backoffUntil(slot)) states.backOff(slot, backoff, status);
        this.#published.set(id, `${Math.floor(states.cooldownUntil(slot))}:${Math.floor(states.backoffUntil(slot))}:${states.backoffStatus(slot)}`);
      }
    } catch {
      // The pings judge Redis; a missed poll is made up by the next.
    } finally {
      this.#polling = false;
    }
  }

  // ── Redis ──

  /** One script by its SHA (EVALSHA); loaded on the first NOSCRIPT (a fresh or restarted Redis). */
  async #eval<T>(script: string, key: string, args: readonly string[], timeout: number, loaded = false): Promise<T> {
    let sha = this.#shas.get(script);
    if (sha === undefined) {
      sha = await this.#link.send<string>(key, ['SCRIPT', 'LOAD', script], timeout);
      this.#shas.set(script, sha);
    }
    try {
      return await this.#link.send<T>(key, ['EVALSHA', sha, '1', key, ...args], timeout);
    } catch (err) {
      if (loaded || !String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      this.#shas.delete(script);
      return this.#eval(script, key, args, timeout, true);
    }
  }

  /** Deployment ids with rpm or tpm, and their slots. */
  #limited(): Array<[string, number]> {
    const routing = this.#deps.routing();
    const out: Array<[string, number]> = [];
    routing.aliases.forEach((route, i) => {
      if (route.rpm > 0 || route.tpm > 0) out.push([route.id, routing.slots[i] as number]);
    });
    return out;
  }

  #windowMs(): number {
    return this.#deps.routing().router.limitWindowMs;
  }

  /**
   * The clock offset in buckets, rounded by `round`: what moves a bucket the workers counted by this pod's clock into
   * the fleet's, to a bucket no later (Math.floor, for what goes back) or no earlier (Math.ceil, for what is added).
   */
  #offsetBuckets(round: (x: number) => number): number {
    return round(this.clockOffsetMs / (this.#windowMs() / BUCKETS));
  }

  #bucket(now = this.#now()): number {
    return Math.floor(now / (this.#windowMs() / BUCKETS));
  }
}

/**
 * What calls did not use, as drainRefunds hands it over (buckets of this pod's clock), pushed on `back` as ADD's
 * triples (taken off), each moved by `shift` buckets into the fleet's time.
 */
function givingBack(back: string[], shift: number): (bucket: number, requests: number, tokens: number) => void {
  return (bucket, requests, tokens) => back.push(String(bucket + shift), String(-Math.round(requests)), String(-Math.round(tokens)));
}

function pairs(flat: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}
