/**
 * The attempt loop: one routed request from its first pick to its one
 * answer, applying CONTRACT.md's failure table.
 *
 * - Each attempt picks again (pick.ts): within the group first, never a
 *   deployment that already failed this request while another is usable;
 *   when the group is spent, its fallback groups in order; a prompt too
 *   long for the model moves to the `context_window_fallbacks` instead.
 *   When nothing that has not failed is usable anywhere, the same ones are
 *   tried again, `retry_after` after their last attempt.
 * - A provider's Retry-After is honoured by every request on every thread:
 *   the deployment backs off in the shared state and no pick takes it until
 *   the wait ends. When nothing else can serve, the request waits the
 *   back-off out if it is at most `max_retry_wait` and ends before the
 *   deadline; otherwise it is answered at once, with the wait left as its
 *   Retry-After. Waits are reported (RoutingFacts.backoffMs, the attempt's span).
 * - `num_retries` bounds the attempts after the first (fallback attempts
 *   count); the group's `timeout` bounds the whole request (each attempt's
 *   total deadline is at most what is left), and when it passes the answer
 *   is 502 `upstream_timeout`.
 * - A client that leaves stops everything at once: the attempt's upstream
 *   request is aborted, nothing further is tried or answered.
 * - Outcomes weigh on the shared deployment state: successes feed the
 *   latency average and end a half-open trial; failures count toward
 *   `allowed_fails` or cool at once (429, 401, 403), except in a lone group.
 * - The answer: a success as it came (a stream once its commit gate opens);
 *   503 `no_deployment_available` when nothing could be tried at all; else
 *   the last failure (a provider 4xx as sent, otherwise a 502).
 *
 * Modelled on undici's RetryHandler (a retry decided from the outcome, never
 * after a byte went to the client) and LiteLLM's cooldown handling.
 */
import type { RouterSettings, Upstream } from '../../protocol/config.js';
import { COOLING, REFUSED, type DeploymentStates, type Reservation } from '../../protocol/deployment-state.js';
import type { ErrorCode } from '../../protocol/errors.js';
import type { Backoff, HeaderList, InferencePick, Operation, RouteLabels, RoutingNotice, Usage } from '../../protocol/frames.js';
import { NO_BUCKET } from '../../protocol/deployment-limits.js';
import { CallControl } from '../call-control.js';
import type { CallTrace } from '../call-trace.js';
import type { Flow } from '../flow.js';
import type { AttemptSink, ProviderAdapter, ProviderCall, Thinking } from '../providers/adapter.js';
import type { Deployment, Group } from '../router.js';
import { CommitGate, type GateOwner } from './commit-gate.js';
import { AttemptFailure, classify, gatewayErrorOf } from './failure.js';
import { NOT_COUNTED, pick, pickResult, type PickResult } from './pick.js';

/** What the loop answers through: an attempt's success as it came, and the routing facts the front reports. */
export interface ClientSink extends AttemptSink {
  /** `events`: how a stream failing after its commit ends, when the operation has its own form (workers/inbound/responses/). */
  fail(error: { code: ErrorCode; message: string; events?: string }, headers: HeaderList): void;
  /**
   * Who served the answer about to be sent (or was tried last), how many attempts it took, the fallback group if one
   * served, and how long the attempts waited on upstreams before it (RoutingFacts.waitedMs).
   */
  routed(deployment: string | null, attempts: number, fallback: string | null, labels: RouteLabels, waitedMs: number, backoff: Backoff | null, inference?: InferencePick | null): void;
}

/** What the loop needs from its worker session. */
export interface RoutingEnv {
  readonly states: DeploymentStates;
  readonly settings: RouterSettings;
  readonly adapterFor: (deployment: Deployment) => ProviderAdapter;
  readonly notice: (notice: RoutingNotice) => void;
  /** An attempt failed with an error the gateway did not expect (answered 500 internal_error): its cause, for the log. */
  readonly fault: (requestId: string, err: unknown) => void;
  /** Date.now: the shared state's clock (cooldowns are wall times every thread reads). */
  readonly now: () => number;
  /** Calls `fire` after `ms` of `now`'s clock (setTimeout); the answer cancels it. A test's fake clock moves here. */
  readonly after: (ms: number, fire: () => void) => () => void;
}

export interface RoutedRequest {
  readonly group: Group;
  readonly op: Operation;
  /** The parsed body: its `model` is set to each attempt's upstream id. */
  readonly body: Record<string, unknown>;
  /**
   * What to send a deployment instead, when the operation decides it per deployment (the Responses
   * and Messages APIs), with the caller's headers a passthrough forwards; null: `op` and `body`.
   */
  readonly prepare: ((upstream: Upstream) => { op: Operation; body: Record<string, unknown>; headers?: HeaderList; droppable?: ReadonlySet<string>; thinking?: Thinking }) | null;
  readonly stream: boolean;
  readonly requestId: string;
  readonly maxResponseBytes: number;
  readonly flow: Flow;
  /** Aborted when the client leaves. */
  readonly control: CallControl;
  /** Tracing on: the call's trace (each attempt's span id and traceparent; what a sampled call reports). */
  readonly trace: CallTrace | null;
  /** The body's size in bytes: its prompt's token estimate for `tpm` (bytes / 4); absent: 0. */
  readonly bodyBytes?: number;
  /** The prompt's chained block hashes, when its group scores prefixes (inference-aware); else null. */
  readonly prompt: Int32Array | null;
  /** x-switchyard-priority: sheddable (CONTRACT.md, Shedding). */
  readonly sheddable: boolean;
}

/** An attempt's span when the client left during it: neither served nor failed on its own. */
const CANCELLED = 'cancelled';
/** A provider's Retry-After lengthens a cooldown, and backs a deployment off, up to this (CONTRACT.md, cooldown_time). */
const MAX_PROVIDER_WAIT_MS = 300_000;
/** Why a request waited before trying a deployment again: router_settings.retry_after. */
const CONFIGURED_WAIT = 'router_settings.retry_after';
const NO_HEADERS: HeaderList = [];

/** Runs the request to its one answer (or to nothing, when the client left). */
export function routeCall(env: RoutingEnv, request: RoutedRequest, client: ClientSink): Promise<void> {
  return new RoutedCall(env, request, client).run();
}

class RoutedCall implements GateOwner {
  readonly client: ClientSink;
  readonly #env: RoutingEnv;
  readonly #request: RoutedRequest;
  readonly #deadline: number;
  readonly #pick: PickResult;
  /** The groups tried in turn: the requested one and its fallbacks, or its context-window fallbacks. */
  #chain: readonly Group[];
  #at = 0;
  #attempts = 0;
  /** Deployments that failed this request, and when this request may try each again (performance.now). */
  #failed: Deployment[] | null = null;
  #again: Again[] | null = null;
  #lastFailure: AttemptFailure | null = null;
  // The attempt under way, or the last one (its deployment and group name the answer):
  #deployment: Deployment | null = null;
  #group: Group | null = null;
  #reservation: Reservation = REFUSED;
  /** The attempt's inference-aware pick: the scrape generation it was counted under, and why it was chosen (null: not such a pick). */
  #generation = NOT_COUNTED;
  #inference: InferencePick | null = null;
  #started = 0;
  #call: ProviderCall | null = null;
  /** The last attempt ended on the request's own deadline (its total timer was what was left of the request's time). */
  #timedOutAttempt = false;
  /** RoutingFacts.waitedMs: the upstreams' share of the time before the answer. */
  #waitedMs = 0;
  /** RoutingFacts.backoff: the waits before attempts so far (null: none), and the one before the attempt about to start. */
  #backoff: Backoff | null = null;
  #waitBeforeAttempt: Backoff | null = null;

  constructor(env: RoutingEnv, request: RoutedRequest, client: ClientSink) {
    this.#env = env;
    this.#request = request;
    this.client = client;
    this.#chain = request.group.chain;
    this.#deadline = performance.now() + request.group.timeoutMs;
    this.#pick = pickResult(request.prompt, request.sheddable, { tokens: tokenEstimate(request), counted: request.op !== 'count_tokens', windowMs: env.settings.limitWindowMs });
  }

  async run(): Promise<void> {
    const { control } = this.#request;
    for (;;) {
      const now = this.#env.now();
      const deployment = this.#choose(now);
      if (deployment === null && this.#pick.shed) return this.#shed();
      if (deployment === null) {
        // Nothing usable: perhaps only because a provider asked for a pause, which may be waited out.
        const backedOff = this.#soonestBackoff(now);
        if (backedOff === null) return this.#unavailable();
        const wait = backedOff.until - now;
        if (!this.#mayWait(wait)) return this.#backedOff(backedOff.deployment, backedOff.group, wait);
        await this.#pause(wait, `${this.#env.states.backoffStatus(backedOff.deployment.slot)} Retry-After from ${backedOff.deployment.id}`);
        if (control.aborted) return;
        continue;
      }
      const reservation = this.#pick.reservation;
      const generation = this.#pick.generation;
      const again = this.#againAfter(deployment);
      if (again !== null) {
        const wait = again.at - performance.now();
        if (again.asked && !this.#mayWait(wait)) {
          this.#unreserve(deployment, reservation, generation);
          return this.#backedOff(deployment, this.#chain[this.#at] as Group, wait);
        }
        if (wait > 0) await this.#pause(Math.min(wait, this.#deadline - performance.now()), again.reason);
      }
      if (control.aborted) return this.#unreserve(deployment, reservation, generation);
      if (performance.now() >= this.#deadline) {
        this.#unreserve(deployment, reservation, generation);
        return this.#timedOut();
      }
      this.#attempts++;
      this.#generation = generation;
      this.#inference = this.#pick.reason === null ? null : { reason: this.#pick.reason, ratio: this.#pick.ratio };
      const failure = await this.#attempt(deployment, reservation);
      if (failure === null || control.aborted) return;
      if (this.#decide(deployment, failure)) return;
    }
  }

  /** GateOwner: the attempt under way is about to send its first byte. It succeeded, as far as its deployment goes. */
  committing(gate: CommitGate): void {
    const d = this.#deployment as Deployment;
    const call = this.#call as ProviderCall;
    const sampleAt = this.#request.stream ? gate.committedAt : call.headersAt || gate.committedAt;
    if (d.slot >= 0) this.#env.states.succeed(d.slot, this.#reservation, sampleAt - this.#started);
    // The upstream's share of the time to this answer: its request sent to its answer read (a stream: its first content).
    if (call.sentAt > 0) this.#waitedMs += (this.#request.stream ? gate.committedAt : call.readAt || gate.committedAt) - call.sentAt;
    this.#routed();
  }

  /** GateOwner: the answer is whole; its tokens are what the provider's usage says, else the estimate stands. */
  used(usage: Usage | null): void {
    const d = this.#deployment as Deployment;
    const ticket = this.#pick.limit;
    if (d.limits === null || ticket.bucket === NO_BUCKET) return;
    if (usage === null) ticket.bucket = NO_BUCKET;
    else d.limits.settle(d.slot, ticket, usage.prompt + usage.completion, this.#env.now(), this.#pick.windowMs);
  }

  /** A reservation made by a pick and never used for an attempt: its place, its count since the scrape and its rpm/tpm go back. */
  #unreserve(d: Deployment, reservation: Reservation, generation: number): void {
    this.#release(d, reservation, generation);
    d.limits?.giveBack(d.slot, this.#pick.limit, this.#env.now(), this.#pick.windowMs);
  }

  /** One attempt; null when it answered (or the client left), else its failure. */
  async #attempt(deployment: Deployment, reservation: Reservation): Promise<AttemptFailure | null> {
    const request = this.#request;
    const { trace } = request;
    const control = new CallControl();
    request.control.onAbort((reason) => control.abort(reason));
    const sent = this.#prepare(deployment);
    const call: ProviderCall = {
      op: sent.op,
      upstream: deployment.upstream,
      body: sent.body,
      headers: sent.headers ?? NO_HEADERS,
      droppable: sent.droppable,
      thinking: sent.thinking,
      stream: request.stream,
      requestId: request.requestId,
      maxResponseBytes: request.maxResponseBytes,
      control,
      flow: request.flow,
      budgetMs: this.#deadline - performance.now(),
      headersAt: 0,
      sentAt: 0,
      readAt: 0,
      traceparent: trace === null ? null : trace.begin(),
      tracestate: trace === null ? '' : trace.tracestate,
    };
    const gate = new CommitGate(this, this.#env.settings.streamCommitTimeoutMs);
    this.#deployment = deployment;
    this.#group = this.#chain[this.#at] as Group;
    this.#reservation = reservation;
    this.#call = call;
    this.#started = performance.now();
    /** How the attempt ended, for its span: the upstream's status, the failure's code. */
    let status = 0;
    let error: string | null = CANCELLED;
    let unsent = false;
    try {
      if (sent.error !== null) throw sent.error;
      await this.#env.adapterFor(deployment).call(call, gate);
      status = gate.status;
      error = null;
      return null;
    } catch (err) {
      if (request.control.aborted) return null;
      const failure = classify(err);
      unsent = !gate.committed && (call.sentAt === 0 || failure.code === 'upstream_unreachable' || failure.code === 'upstream_connect_timeout');
      if (failure.code === 'internal_error') this.#env.fault(request.requestId, err);
      this.#backOff(deployment, failure);
      status = failure.status;
      error = failure.code;
      if (call.sentAt > 0 && !gate.committed) this.#waitedMs += performance.now() - call.sentAt;
      if (gate.committed) {
        // After the commit a failure is the client's: one SSE error event (CONTRACT.md, HTTP). The trial, if
        // this was one, already succeeded at the commit.
        this.#weigh(deployment, REFUSED, failure);
        this.client.fail(gatewayErrorOf(failure), NO_HEADERS);
        return null;
      }
      // Weighed while still reserved: a failed trial cools its deployment before the trial is given back.
      // An attempt cut short by the request's own time is no fault of its deployment.
      if (!this.#outOfTime(call, failure)) this.#weigh(deployment, reservation, failure);
      return failure;
    } finally {
      gate.close();
      trace?.attempted({ deployment: deployment.id, attempt: this.#attempts, op: sent.op, upstream: deployment.upstream, startedAt: this.#started, sentAt: call.sentAt, status, error, firstChunkAt: gate.firstContentAt, backoff: this.#waitBeforeAttempt });
      this.#waitBeforeAttempt = null;
      request.control.onAbort(null);
      this.#release(deployment, reservation, this.#generation);
      const ticket = this.#pick.limit;
      if (deployment.limits !== null && ticket.bucket !== NO_BUCKET) {
        // Never sent (or its connection never made): the call gives its place and its tokens back. Sent and
        // failed: it counts, on its estimate. A client gone before the send counts as sent: cheap and on the safe side.
        if (unsent) deployment.limits.giveBack(deployment.slot, ticket, this.#env.now(), this.#pick.windowMs);
        else ticket.bucket = NO_BUCKET;
      }
      this.#call = null;
    }
  }

  /**
   * Whether the attempt failed because the request's time ran out: past the deadline, or its total
   * timer fired when that timer was the request's remaining time (a timer may fire a millisecond or
   * two before performance.now() reaches the deadline: libuv times it from the loop's cached clock).
   */
  #outOfTime(call: ProviderCall, failure: AttemptFailure): boolean {
    this.#timedOutAttempt = performance.now() >= this.#deadline || (failure.code === 'upstream_timeout' && call.budgetMs < call.upstream.timeouts.totalMs);
    return this.#timedOutAttempt;
  }

  /** The operation and body for `deployment`; what `prepare` threw (a parameter its API cannot carry) is the attempt's failure, thrown in its try. */
  #prepare(deployment: Deployment): { op: Operation; body: Record<string, unknown>; headers?: HeaderList; droppable?: ReadonlySet<string>; thinking?: Thinking; error: unknown } {
    const request = this.#request;
    if (request.prepare === null) {
      request.body.model = deployment.upstream.upstreamModel;
      return { op: request.op, body: request.body, error: null };
    }
    try {
      const sent = request.prepare(deployment.upstream);
      return { op: sent.op, body: sent.body, headers: sent.headers, droppable: sent.droppable, thinking: sent.thinking, error: null };
    } catch (error) {
      return { op: request.op, body: request.body, error };
    }
  }

  /** After a failure before any byte went out: true when the request is answered, false to try again. */
  #decide(deployment: Deployment, failure: AttemptFailure): boolean {
    this.#lastFailure = failure;
    if (this.#timedOutAttempt || performance.now() >= this.#deadline) {
      this.#timedOut();
      return true;
    }
    (this.#failed ??= []).push(deployment);
    (this.#again ??= []).push(againOf(deployment, failure, this.#env.settings.retryAfterMs));
    switch (failure.kind) {
      case 'client_error':
      case 'fatal':
        this.#answer(failure);
        return true;
      case 'context_window': {
        // Never retried in its group: on to the context-window fallbacks (the failing group's, else the requested one's).
        const group = this.#chain[this.#at] as Group;
        if (this.#chain !== this.#request.group.chain) this.#at++;
        else {
          this.#chain = group.contextWindowFallbacks.length > 0 ? group.contextWindowFallbacks : this.#request.group.contextWindowFallbacks;
          this.#at = 0;
        }
        if (this.#at >= this.#chain.length) {
          this.#answer(failure);
          return true;
        }
        break;
      }
      default:
        break;
    }
    if (this.#attempts > this.#env.settings.numRetries) {
      this.#answer(failure);
      return true;
    }
    return false;
  }

  /** The next deployment, reserved: one that has not failed this request if any is usable, else one that has. */
  #choose(now: number): Deployment | null {
    const { states, settings } = this.#env;
    const chain = this.#chain;
    for (let i = this.#at; i < chain.length; i++) {
      const d = pick(chain[i] as Group, states, settings, now, this.#failed, this.#pick);
      if (d !== null) {
        this.#at = i;
        return d;
      }
      if (this.#pick.shed) {
        this.#at = i;
        return null;
      }
    }
    if (this.#failed === null) return null;
    for (let i = this.#at; i < chain.length; i++) {
      const d = pick(chain[i] as Group, states, settings, now, null, this.#pick);
      if (d !== null) {
        this.#at = i;
        return d;
      }
      if (this.#pick.shed) {
        this.#at = i;
        return null;
      }
    }
    return null;
  }

  /** Gives back a reservation, and the call's count among those sent since its deployment's scrape (inference-aware). */
  #release(d: Deployment, reservation: Reservation, generation: number): void {
    this.#env.states.release(d.slot, reservation);
    if (generation !== NOT_COUNTED && reservation !== REFUSED) this.#env.states.sentDone(d.slot, generation);
  }

  /** When this request may try `deployment` again, and why; null when it may at once (it has not failed it). */
  #againAfter(deployment: Deployment): Again | null {
    const failed = this.#failed;
    if (failed === null) return null;
    const at = failed.lastIndexOf(deployment);
    return at === -1 ? null : ((this.#again as Again[])[at] as Again);
  }

  /**
   * A provider asked its deployment to be left alone for a while (Retry-After, retry-after-ms): no
   * request of any thread picks it until then (CONTRACT.md, "A provider's Retry-After … is
   * honoured"). A route-rule target keeps no shared state: only this request waits for it (againOf).
   */
  #backOff(d: Deployment, failure: AttemptFailure): void {
    if (d.slot < 0 || failure.retryAfterMs <= 0 || failure.status === 0 || (failure.kind !== 'rate_limited' && failure.kind !== 'transient')) return;
    this.#env.states.backOff(d.slot, this.#env.now() + Math.min(failure.retryAfterMs, MAX_PROVIDER_WAIT_MS), failure.status);
  }

  /**
   * The soonest end of a back-off of a deployment of the chain that is not cooling (a cooling one is
   * the cooldown rule's: every deployment cooling is a 503 at once); null when none is backing off.
   */
  #soonestBackoff(now: number): { deployment: Deployment; group: Group; until: number } | null {
    const { states } = this.#env;
    let best: { deployment: Deployment; group: Group; until: number } | null = null;
    for (let i = this.#at; i < this.#chain.length; i++) {
      const group = this.#chain[i] as Group;
      for (const d of group.deployments) {
        if (d.slot < 0) continue;
        const until = states.backoffUntil(d.slot);
        if (until > now && states.stateAt(d.slot, now) !== COOLING && (best === null || until < best.until)) best = { deployment: d, group, until };
      }
    }
    return best;
  }

  /** Whether a wait the provider asked for may be waited out: at most max_retry_wait, and over before the deadline. */
  #mayWait(ms: number): boolean {
    return ms <= this.#env.settings.maxRetryWaitMs && performance.now() + ms < this.#deadline;
  }

  /** Waits `ms` before the next attempt (or less, when the client leaves), and says so in the answer's facts and the attempt's span. */
  async #pause(ms: number, reason: string): Promise<void> {
    const started = performance.now();
    await this.#sleep(ms);
    const waited = performance.now() - started;
    this.#waitedMs += waited;
    // Waits before one attempt add up: a timer may fire a millisecond before the wall clock reaches the back-off's end,
    // and the loop then waits out that millisecond too.
    this.#waitBeforeAttempt = { ms: (this.#waitBeforeAttempt?.ms ?? 0) + waited, reason };
    this.#backoff = { ms: (this.#backoff?.ms ?? 0) + waited, reason };
  }

  /** A failure's weight on its deployment's shared state (the failure table's "cools" column). */
  #weigh(d: Deployment, reservation: Reservation, failure: AttemptFailure): void {
    const kind = failure.kind;
    // Logged for every deployment, a route rule's (which keeps no state) included.
    if (kind === 'auth') this.#notice('upstream_auth_failed', d, failure, 0);
    if (d.slot < 0 || (kind !== 'transient' && kind !== 'rate_limited' && kind !== 'auth')) return;
    const { states, settings } = this.#env;
    const cooldownMs = Math.max(settings.cooldownMs, Math.min(failure.retryAfterMs, MAX_PROVIDER_WAIT_MS));
    const lone = (this.#group as Group).lone;
    const record = { code: failure.code, status: failure.status, coolNow: kind !== 'transient', cooldownMs, allowedFails: settings.allowedFails, lone };
    const cooled = states.fail(d.slot, reservation, record, this.#env.now());
    if (cooled) this.#notice('deployment_cooled', d, failure, cooldownMs);
  }

  #notice(event: RoutingNotice['event'], d: Deployment, failure: AttemptFailure, cooldownMs: number): void {
    this.#env.notice({ event, model: d.labels.model, deployment: d.id, code: failure.code, status: failure.status, cooldownMs, detail: failure.detail });
  }

  /**
   * Who answers: the deployment of the attempt under way or last made. The labels keep the group the caller
   * asked for (bounded: a configured alias) with the serving deployment's provider.
   */
  #routed(): void {
    const d = this.#deployment as Deployment;
    const asked = this.#request.group;
    if (this.#group === asked) this.client.routed(d.id, this.#attempts, null, d.labels, this.#waitedMs, this.#backoff, this.#inference);
    else this.client.routed(d.id, this.#attempts, (this.#group as Group).name, { model: asked.name, provider: d.labels.provider }, this.#waitedMs, this.#backoff, this.#inference);
  }

  /**
   * CONTRACT.md, Inference-aware routing, Shedding: a sheddable request, and every replica with fresh metrics
   * is saturated: 429 capacity_exhausted with Retry-After 1, at once (nothing was reserved). Counted on the
   * front (switchyard_inference_shed_total) from the code.
   */
  #shed(): void {
    const group = this.#chain[this.#at] as Group;
    if (this.#deployment !== null) this.#routed();
    else this.client.routed(null, this.#attempts, null, { model: this.#request.group.name, provider: (group.deployments[0] as Deployment).labels.provider }, this.#waitedMs, this.#backoff, null);
    this.client.fail({ code: 'capacity_exhausted', message: `every replica of "${group.name}" is saturated; this sheddable request was shed, retry after the Retry-After delay` }, ['retry-after', '1']);
  }

  /**
   * The last failure, as the caller gets it: a provider answer as sent, otherwise the gateway's error.
   * `retryAfter`: seconds the caller should wait, added when the answer carries no Retry-After of its own.
   */
  #answer(failure: AttemptFailure, retryAfter: string | null = null): void {
    this.#routed();
    if (failure.answer !== null) {
      const { status, contentType, headers, body } = failure.answer;
      this.client.reply(status, contentType, withRetryAfter(headers, retryAfter), body, null, 0);
    } else {
      this.client.fail(gatewayErrorOf(failure), withRetryAfter(failure.headers, retryAfter));
    }
  }

  /**
   * The only deployment that could serve asked for a wait longer than max_retry_wait or the time the
   * request has left: answered at once, with the wait left as Retry-After. A request that tried it
   * gets its failure; one that arrived during the wait, the provider's status (a 429 as 429
   * `rate_limited`, a 5xx as 502 `upstream_error`).
   */
  #backedOff(d: Deployment, group: Group, waitMs: number): void {
    const seconds = String(Math.max(1, Math.ceil(waitMs / 1000)));
    if (this.#lastFailure !== null) return this.#answer(this.#lastFailure, seconds);
    this.#deployment = d;
    this.#group = group;
    this.#routed();
    const status = d.slot < 0 ? 0 : this.#env.states.backoffStatus(d.slot);
    const message = `the provider of deployment "${d.id}" asked for a pause (status ${status}); retry after the Retry-After delay`;
    this.client.fail({ code: status === 429 ? 'rate_limited' : 'upstream_error', message }, ['retry-after', seconds]);
  }

  #timedOut(): void {
    if (this.#deployment !== null) this.#routed();
    this.client.fail({ code: 'upstream_timeout', message: 'the request exceeded its routing timeout (router_settings.timeout) across its attempts' }, NO_HEADERS);
  }

  /**
   * Nothing can be tried now: the last failure if there was an attempt; else 429 `rate_limited` when a
   * deployment is held only by its rpm/tpm, with the time until the soonest has room; else 503 with the
   * time to the soonest end of a cooldown (CONTRACT.md, Shared state across pods).
   */
  #unavailable(): void {
    if (this.#lastFailure !== null) return this.#answer(this.#lastFailure);
    const group = this.#request.group;
    const now = this.#env.now();
    const limitedMs = this.#soonestRoom(now);
    if (limitedMs !== null) {
      this.client.routed(null, 0, null, (group.deployments[0] as Deployment).labels, 0, null);
      const message = `every deployment of "${group.name}" and its fallbacks that could take the request is at its rpm or tpm limit; retry after the Retry-After delay`;
      return this.client.fail({ code: 'rate_limited', message }, ['retry-after', String(Math.max(1, Math.ceil(limitedMs / 1000)))]);
    }
    let soonest = Infinity;
    for (const g of this.#chain) {
      for (const d of g.deployments) {
        const until = d.slot < 0 ? 0 : this.#env.states.cooldownUntil(d.slot);
        if (until > now) soonest = Math.min(soonest, until - now);
      }
    }
    const seconds = Number.isFinite(soonest) ? Math.max(1, Math.ceil(soonest / 1000)) : 1;
    this.client.routed(null, 0, null, group.labels, 0, null);
    this.client.fail({ code: 'no_deployment_available', message: `no deployment of "${group.name}" or its fallbacks can take the request now (cooling down or at capacity)` }, ['retry-after', String(seconds)]);
  }

  /** The soonest time (ms) until a deployment held only by its rpm/tpm has room; null when none is held only by a limit. */
  #soonestRoom(now: number): number | null {
    const { states } = this.#env;
    const { tokens } = this.#pick.limit;
    if (!this.#pick.counted) return null;
    let soonest: number | null = null;
    for (let i = this.#at; i < this.#chain.length; i++) {
      for (const d of (this.#chain[i] as Group).deployments) {
        if (d.limits === null || !states.usable(d.slot, now, d.cap)) continue;
        const wait = d.limits.waitMs(d.slot, d, tokens, now, this.#pick.windowMs);
        if (soonest === null || wait < soonest) soonest = wait;
      }
    }
    return soonest;
  }

  /** Waits `ms`, or less when the client leaves. */
  #sleep(ms: number): Promise<void> {
    const { control } = this.#request;
    return new Promise((resolve) => {
      const done = () => {
        cancel();
        control.onAbort(null);
        resolve();
      };
      const cancel = this.#env.after(Math.max(0, ms), done);
      control.onAbort(done);
    });
  }
}

/** When a request may try a deployment it failed again, and whether the provider's wait (not retry_after) set it. */
interface Again {
  /** performance.now(). */
  readonly at: number;
  readonly asked: boolean;
  readonly reason: string;
}

/**
 * `retry_after` after the failure; a route-rule target (no shared state to back off in) also the
 * wait its provider asked for, which this request honours itself.
 */
function againOf(d: Deployment, failure: AttemptFailure, retryAfterMs: number): Again {
  const now = performance.now();
  const askedMs = d.slot < 0 && failure.status !== 0 ? Math.min(failure.retryAfterMs, MAX_PROVIDER_WAIT_MS) : 0;
  if (askedMs > retryAfterMs) return { at: now + askedMs, asked: true, reason: `${failure.status} Retry-After from ${d.id}` };
  return { at: now + retryAfterMs, asked: false, reason: CONFIGURED_WAIT };
}

/**
 * A call's tokens before it is sent (CONTRACT.md: its prompt estimate plus max_tokens when given): the
 * body's bytes / 4, the usual characters-per-token rule, read off the size the front already knows, so
 * no text is walked on the hot path. JSON punctuation makes it an overestimate, settled on the usage.
 */
function tokenEstimate(request: RoutedRequest): number {
  const body = request.body;
  const max = body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens;
  return Math.ceil((request.bodyBytes ?? 0) / 4) + (typeof max === 'number' && max > 0 ? Math.ceil(max) : 0);
}

/** `headers` with a Retry-After of `seconds` when it has none (`seconds` null: as it is). */
function withRetryAfter(headers: HeaderList, seconds: string | null): HeaderList {
  if (seconds === null) return headers;
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === 'retry-after') return headers;
  return [...headers, 'retry-after', seconds];
}
