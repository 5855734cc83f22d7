/**
 * Choosing a deployment of a group and reserving it (CONTRACT.md,
 * Strategies). Only deployments that are usable now are candidates: not
 * cooling, the trial free if half-open, under their cap, and not one the
 * request asked to avoid (it failed this request already). Of those, the
 * lowest `order` serves; within it:
 *
 * - simple-shuffle: at random by weight;
 * - least-busy: the fewest calls in flight in the pod;
 * - latency-based-routing: a deployment with no sample first, else the
 *   lowest latency average;
 * - inference-aware (`chooseInference` below): in a group with server_metrics, the
 *   replica with the best score of its prefix, queue and KV cache; in any
 *   other group, least-busy.
 *
 * The choice is then reserved in the shared state; another thread may
 * have taken the last place (or the trial) in between, and then the next
 * best is tried. O(deployments) per round, no allocation: the group's
 * `refused` array is reused.
 */
import type { InferenceRouting, RouterSettings } from '../../protocol/config.js';
import { REFUSED, RESERVED, type DeploymentStates, type Reservation } from '../../protocol/deployment-state.js';
import type { InferenceReason } from '../../protocol/frames.js';
import type { Deployment, Group } from '../router.js';
import { NO_BUCKET, type LimitTicket } from '../../protocol/deployment-limits.js';

/** PickResult.generation of a call not counted as sent since a scrape (no server_metrics, or no pick). */
export const NOT_COUNTED = -1;

/** One request's picks: what it brings (its prompt's blocks, its priority, its rpm/tpm ticket) and what each pick leaves. */
export interface PickResult {
  reservation: Reservation;
  /** The request's rpm/tpm ticket: its estimate in, what it took out. */
  readonly limit: LimitTicket;
  /** Whether the call counts toward rpm/tpm (a count_tokens call, answered without a model call, does not). */
  readonly counted: boolean;
  /** The limit window (router_settings.limit_window). */
  windowMs: number;
  /** The prompt's chained block hashes (protocol/prefix-hash.ts), hashed once for the request; null when its group scores none. */
  readonly prompt: Int32Array | null;
  /** x-switchyard-priority: sheddable (or negative). */
  readonly sheddable: boolean;
  /** Inference-aware: the scrape generation the call was counted under (DeploymentStates.sent); NOT_COUNTED otherwise. */
  generation: number;
  /** Inference-aware: why the deployment was chosen; null for any other pick. */
  reason: InferenceReason | null;
  /** Inference-aware: the chosen deployment's prefix score. */
  ratio: number;
  /** Set instead of a choice: the request is sheddable and every replica with fresh metrics is saturated (CONTRACT.md, Shedding). */
  shed: boolean;
}

/** What a request brings to the rpm/tpm limits: its token estimate, whether it counts, the window. */
export interface LimitAsk {
  readonly tokens: number;
  /** A count_tokens call, answered without a model call, does not count. */
  readonly counted: boolean;
  readonly windowMs: number;
}

/** A request that no limit counts (tests of the pick alone). */
const UNCOUNTED: LimitAsk = { tokens: 0, counted: false, windowMs: 60_000 };

/** The state of a request that picks: nothing picked yet. */
export function pickResult(prompt: Int32Array | null, sheddable: boolean, ask: LimitAsk = UNCOUNTED): PickResult {
  return {
    reservation: REFUSED,
    limit: { bucket: NO_BUCKET, tokens: ask.tokens, credit: false },
    counted: ask.counted,
    windowMs: ask.windowMs,
    prompt,
    sheddable,
    generation: NOT_COUNTED,
    reason: null,
    ratio: 0,
    shed: false,
  };
}

export function pick(group: Group, states: DeploymentStates, settings: RouterSettings, now: number, avoid: readonly Deployment[] | null, out: PickResult): Deployment | null {
  const { deployments } = group;
  const strategy = settings.strategy;
  out.reason = null;
  out.generation = NOT_COUNTED;
  if (strategy === 'inference-aware' && group.inference) return pickInference(group, states, settings, now, avoid, out);
  if (deployments.length === 1) {
    // The common case, and the cost of a single-deployment alias: one check and one reservation.
    const only = deployments[0] as Deployment;
    if (avoid !== null && avoid.includes(only)) return null;
    return reserve(only, states, now, out) ? only : null;
  }
  const refused = group.refused;
  refused.fill(0);
  for (let round = 0; round < deployments.length; round++) {
    const order = lowestOrder(deployments, refused, states, now, avoid);
    if (order === Infinity) return null;
    const at = choose(group, states, strategy === 'inference-aware' ? 'least-busy' : strategy, now, avoid, order);
    const d = deployments[at] as Deployment;
    if (reserve(d, states, now, out)) return d;
    refused[at] = 1;
  }
  return null;
}

/**
 * The inference-aware pick of a group with server_metrics: like `pick`, but the choice within the order is
 * inference-pick.ts's; the chosen replica counts the call as sent since its scrape and gets the prompt's blocks
 * in its index (CONTRACT.md: "filled at the pick", so a failed attempt's blocks stay). A sheddable request
 * finds every replica with fresh metrics saturated: nothing is reserved, `out.shed` says why.
 */
function pickInference(group: Group, states: DeploymentStates, settings: RouterSettings, now: number, avoid: readonly Deployment[] | null, out: PickResult): Deployment | null {
  const { deployments } = group;
  const refused = group.refused;
  refused.fill(0);
  for (let round = 0; round < deployments.length; round++) {
    const order = lowestOrder(deployments, refused, states, now, avoid);
    if (order === Infinity) return null;
    out.shed = false;
    const at = chooseInference(group, states, settings.inference, now, avoid, order, out);
    if (out.shed) return null;
    const d = deployments[at] as Deployment;
    if (reserve(d, states, now, out)) {
      if (d.index !== null && d.slot >= 0) {
        out.generation = states.sent(d.slot);
        if (out.prompt !== null) d.index.insert(out.prompt, out.prompt.length);
      }
      return d;
    }
    refused[at] = 1;
  }
  return null;
}

/** The lowest `order` among the deployments a pick may still choose; Infinity when there is none. */
function lowestOrder(deployments: readonly Deployment[], refused: Uint8Array, states: DeploymentStates, now: number, avoid: readonly Deployment[] | null): number {
  let order = Infinity;
  for (let i = 0; i < deployments.length; i++) {
    const d = deployments[i] as Deployment;
    if (d.order < order && candidate(d, i, refused, states, now, avoid)) order = d.order;
  }
  return order;
}

function candidate(d: Deployment, i: number, refused: Uint8Array, states: DeploymentStates, now: number, avoid: readonly Deployment[] | null): boolean {
  if (refused[i] === 1 || (avoid !== null && avoid.includes(d))) return false;
  return d.slot < 0 || states.usable(d.slot, now, d.cap);
}

function reserve(d: Deployment, states: DeploymentStates, now: number, out: PickResult): boolean {
  out.reservation = d.slot < 0 ? RESERVED : states.reserve(d.slot, now, d.cap);
  if (out.reservation === REFUSED) return false;
  out.limit.bucket = NO_BUCKET;
  // A deployment at its rpm or tpm is passed over like one at its cap (CONTRACT.md, Shared state across pods).
  if (d.limits === null || !out.counted || d.limits.take(d.slot, d, out.limit.tokens, now, out.windowMs, out.limit)) return true;
  states.release(d.slot, out.reservation);
  out.reservation = REFUSED;
  return false;
}

/** The index of the strategy's choice among the candidates of `order` (there is at least one). */
function choose(group: Group, states: DeploymentStates, strategy: 'simple-shuffle' | 'least-busy' | 'latency-based-routing', now: number, avoid: readonly Deployment[] | null, order: number): number {
  const { deployments } = group;
  const n = deployments.length;
  if (strategy === 'simple-shuffle') {
    let total = 0;
    for (let i = 0; i < n; i++) if (inTier(group, i, order, states, now, avoid)) total += (deployments[i] as Deployment).weight;
    let r = Math.random() * total;
    let last = -1;
    for (let i = 0; i < n; i++) {
      if (!inTier(group, i, order, states, now, avoid)) continue;
      last = i;
      r -= (deployments[i] as Deployment).weight;
      if (r < 0) return i;
    }
    return last;
  }
  // Ties go to the first found from a start that turns on every pick: equal deployments share the load.
  const start = group.cursor;
  group.cursor = start + 1 === n ? 0 : start + 1;
  let best = -1;
  let bestScore = Infinity;
  for (let k = 0; k < n; k++) {
    const i = (start + k) % n;
    if (!inTier(group, i, order, states, now, avoid)) continue;
    const d = deployments[i] as Deployment;
    let score: number;
    if (strategy === 'least-busy') score = d.slot < 0 ? 0 : states.inFlight(d.slot);
    else {
      if (d.slot < 0 || !states.hasLatency(d.slot)) return i;
      score = states.latency(d.slot);
    }
    if (score < bestScore) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}

/**
 * CONTRACT.md, Inference-aware routing, Pick, among the candidates of `order` (there is at least one):
 *
 * - fresh: metrics scraped within `staleAfterMs` (a deployment without server_metrics never is);
 * - queue estimate = waiting + calls sent since the scrape still in flight; load = waiting +
 *   max(running, this pod's calls in flight) + calls sent since the scrape;
 * - saturated: queue estimate ≥ queue_threshold or KV use ≥ kv_cache_threshold;
 * - the saturated and the stale are left out unless every candidate is; among the rest the highest
 *   prefix·w_prefix + queue·w_queue + (1 − kv)·w_kv_cache wins, the queue score a min-max of the load
 *   over those not left out (fewer is better, 1 for each when all are equal);
 * - no candidate fresh: least-busy (the load is this pod's calls in flight), the prefix score still
 *   counting; every candidate left out with some fresh (all saturated): all of them, a stale one's load
 *   its calls in flight and its KV use taken as full (unknown is not better than known).
 *
 * Ties go to the first found from the group's turning cursor, as least-busy's do. Each candidate's prefix
 * score is one binary search of its index (about 9 lookups for 256 blocks); nothing is allocated.
 * Sets `out.reason` and `out.ratio`, or `out.shed` for a sheddable request when every fresh candidate is saturated.
 */
function chooseInference(group: Group, states: DeploymentStates, settings: InferenceRouting, now: number, avoid: readonly Deployment[] | null, order: number, out: PickResult): number {
  const { deployments, scores } = group;
  const n = deployments.length;
  const prompt = out.prompt;
  let fresh = 0;
  let open = 0;
  // Pass 1: who is fresh, who is saturated, each one's prefix score.
  for (let i = 0; i < n; i++) {
    if (!inTier(group, i, order, states, now, avoid)) continue;
    const d = deployments[i] as Deployment;
    scores[i] = prompt === null || d.index === null ? 0 : d.index.score(prompt, prompt.length);
    if (!isFresh(d, states, now, settings)) continue;
    fresh++;
    const slot = d.slot;
    if (states.waiting(slot) + states.sentSinceScrape(slot) < settings.queueThreshold && states.kvCache(slot) < settings.kvCacheThreshold) open++;
  }
  const mode: InferenceReason = fresh === 0 ? 'no_metrics' : open === 0 ? 'all_saturated' : 'load';
  if (mode === 'all_saturated' && out.sheddable) {
    out.shed = true;
    return -1;
  }
  // Pass 2: the load's range over the candidates that count.
  let least = Infinity;
  let most = -Infinity;
  for (let i = 0; i < n; i++) {
    if (!counts(group, i, order, states, now, avoid, settings, mode)) continue;
    const load = loadOf(deployments[i] as Deployment, states, now, settings, mode);
    if (load < least) least = load;
    if (load > most) most = load;
  }
  // Pass 3: the weighted sum, ties to the first from the turning cursor.
  const { prefix: wPrefix, queue: wQueue, kvCache: wKv } = settings.weights;
  const start = group.cursor;
  group.cursor = start + 1 === n ? 0 : start + 1;
  let best = -1;
  let bestScore = -Infinity;
  for (let k = 0; k < n; k++) {
    const i = (start + k) % n;
    if (!counts(group, i, order, states, now, avoid, settings, mode)) continue;
    const d = deployments[i] as Deployment;
    const queue = most === least ? 1 : (most - loadOf(d, states, now, settings, mode)) / (most - least);
    const kv = mode === 'no_metrics' ? 0 : isFresh(d, states, now, settings) ? states.kvCache(d.slot) : 1;
    const score = wPrefix * (scores[i] as number) + wQueue * queue + wKv * (1 - kv);
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  }
  const ratio = scores[best] as number;
  out.ratio = ratio;
  out.reason = mode === 'load' && ratio > 0 ? 'prefix' : mode;
  return best;
}

function isFresh(d: Deployment, states: DeploymentStates, now: number, settings: InferenceRouting): boolean {
  if (d.index === null || d.slot < 0) return false;
  const at = states.scrapedAt(d.slot);
  return at > 0 && now - at <= settings.staleAfterMs;
}

/** Whether candidate i is among those scored: every candidate, unless some are fresh and unsaturated (`load` mode). */
function counts(group: Group, i: number, order: number, states: DeploymentStates, now: number, avoid: readonly Deployment[] | null, settings: InferenceRouting, mode: InferenceReason): boolean {
  if (!inTier(group, i, order, states, now, avoid)) return false;
  if (mode !== 'load') return true;
  const d = group.deployments[i] as Deployment;
  if (!isFresh(d, states, now, settings)) return false;
  const slot = d.slot;
  return states.waiting(slot) + states.sentSinceScrape(slot) < settings.queueThreshold && states.kvCache(slot) < settings.kvCacheThreshold;
}

/** The contract's load of a fresh candidate; with no fresh figures, this pod's calls in flight to it (least-busy's count). */
function loadOf(d: Deployment, states: DeploymentStates, now: number, settings: InferenceRouting, mode: InferenceReason): number {
  const inFlight = d.slot < 0 ? 0 : states.inFlight(d.slot);
  if (mode === 'no_metrics' || !isFresh(d, states, now, settings)) return inFlight;
  const slot = d.slot;
  return states.waiting(slot) + Math.max(states.running(slot), inFlight) + states.sentSinceScrape(slot);
}

function inTier(group: Group, i: number, order: number, states: DeploymentStates, now: number, avoid: readonly Deployment[] | null): boolean {
  const d = group.deployments[i] as Deployment;
  return d.order === order && candidate(d, i, group.refused, states, now, avoid);
}
