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
 *   lowest latency average.
 *
 * The choice is then reserved in the shared state; another thread may
 * have taken the last place (or the trial) in between, and then the next
 * best is tried. O(deployments) per round, no allocation: the group's
 * `refused` array is reused.
 */
import type { RoutingStrategy } from '../../protocol/config.js';
import { REFUSED, RESERVED, type DeploymentStates, type Reservation } from '../../protocol/deployment-state.js';
import type { Deployment, Group } from '../router.js';
import { NO_BUCKET, type LimitTicket } from '../../protocol/deployment-limits.js';

/** Where a pick leaves the kind of reservation it made; `limit` is the request's rpm/tpm ticket (its estimate in, what it took out). */
export interface PickResult {
  reservation: Reservation;
  readonly limit: LimitTicket;
  /** Whether the call counts toward rpm/tpm (a count_tokens call, answered without a model call, does not). */
  readonly counted: boolean;
  /** The limit window (router_settings.limit_window). */
  windowMs: number;
}

export function pick(group: Group, states: DeploymentStates, strategy: RoutingStrategy, now: number, avoid: readonly Deployment[] | null, out: PickResult): Deployment | null {
  const { deployments } = group;
  if (deployments.length === 1) {
    // The common case, and the cost of a single-deployment alias: one check and one reservation.
    const only = deployments[0] as Deployment;
    if (avoid !== null && avoid.includes(only)) return null;
    return reserve(only, states, now, out) ? only : null;
  }
  const refused = group.refused;
  refused.fill(0);
  for (let round = 0; round < deployments.length; round++) {
    let order = Infinity;
    for (let i = 0; i < deployments.length; i++) {
      const d = deployments[i] as Deployment;
      if (d.order < order && candidate(d, i, refused, states, now, avoid)) order = d.order;
    }
    if (order === Infinity) return null;
    const at = choose(group, states, strategy, now, avoid, order);
    const d = deployments[at] as Deployment;
    if (reserve(d, states, now, out)) return d;
    refused[at] = 1;
  }
  return null;
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
function choose(group: Group, states: DeploymentStates, strategy: RoutingStrategy, now: number, avoid: readonly Deployment[] | null, order: number): number {
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

function inTier(group: Group, i: number, order: number, states: DeploymentStates, now: number, avoid: readonly Deployment[] | null): boolean {
  const d = group.deployments[i] as Deployment;
  return d.order === order && candidate(d, i, group.refused, states, now, avoid);
}
