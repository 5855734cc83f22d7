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
import { REFUSED, type DeploymentStates, type Reservation } from '../../protocol/deployment-state.js';
import type { ErrorCode } from '../../protocol/errors.js';
import type { HeaderList, Operation, RouteLabels, RoutingNotice } from '../../protocol/frames.js';
import { CallControl } from '../call-control.js';
import type { CallTrace } from '../call-trace.js';
import type { Flow } from '../flow.js';
import type { AttemptSink, ProviderAdapter, ProviderCall } from '../providers/adapter.js';
import type { Deployment, Group } from '../router.js';
import { CommitGate, type GateOwner } from './commit-gate.js';
import { AttemptFailure, classify, gatewayErrorOf } from './failure.js';
import { pick, type PickResult } from './pick.js';

/** What the loop answers through: an attempt's success as it came, and the routing facts the front reports. */
export interface ClientSink extends AttemptSink {
  /** `events`: how a stream failing after its commit ends, when the operation has its own form (workers/inbound/responses/). */
  fail(error: { code: ErrorCode; message: string; events?: string }, headers: HeaderList): void;
  /**
   * Who served the answer about to be sent (or was tried last), how many attempts it took, the fallback group if one
   * served, and how long the attempts waited on upstreams before it (RoutingFacts.waitedMs).
   */
  routed(deployment: string | null, attempts: number, fallback: string | null, labels: RouteLabels, waitedMs: number): void;
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
}

export interface RoutedRequest {
  readonly group: Group;
  readonly op: Operation;
  /** The parsed body: its `model` is set to each attempt's upstream id. */
  readonly body: Record<string, unknown>;
  /** What to send a deployment instead, when the operation decides it per deployment (the Responses API); null: `op` and `body`. */
  readonly prepare: ((upstream: Upstream) => { op: Operation; body: Record<string, unknown> }) | null;
  readonly stream: boolean;
  readonly requestId: string;
  readonly maxResponseBytes: number;
  readonly flow: Flow;
  /** Aborted when the client leaves. */
  readonly control: CallControl;
  /** Tracing on: the call's trace (each attempt's span id and traceparent; what a sampled call reports). */
  readonly trace: CallTrace | null;
}

/** An attempt's span when the client left during it: neither served nor failed on its own. */
const CANCELLED = 'cancelled';
/** A provider's Retry-After lengthens a cooldown up to this (CONTRACT.md, cooldown_time). */
const MAX_PROVIDER_COOLDOWN_MS = 300_000;
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
  readonly #pick: PickResult = { reservation: REFUSED };
  /** The groups tried in turn: the requested one and its fallbacks, or its context-window fallbacks. */
  #chain: readonly Group[];
  #at = 0;
  #attempts = 0;
  /** Deployments that failed this request, and when each attempt on them ended (performance.now). */
  #failed: Deployment[] | null = null;
  #endedAt: number[] | null = null;
  #lastFailure: AttemptFailure | null = null;
  // The attempt under way, or the last one (its deployment and group name the answer):
  #deployment: Deployment | null = null;
  #group: Group | null = null;
  #reservation: Reservation = REFUSED;
  #started = 0;
  #call: ProviderCall | null = null;
  /** RoutingFacts.waitedMs: the upstreams' share of the time before the answer. */
  #waitedMs = 0;

  constructor(env: RoutingEnv, request: RoutedRequest, client: ClientSink) {
    this.#env = env;
    this.#request = request;
    this.client = client;
    this.#chain = request.group.chain;
    this.#deadline = performance.now() + request.group.timeoutMs;
  }

  async run(): Promise<void> {
    const { control } = this.#request;
    for (;;) {
      const deployment = this.#choose(this.#env.now());
      if (deployment === null) return this.#unavailable();
      const reservation = this.#pick.reservation;
      const wait = this.#waitBefore(deployment);
      if (wait > 0) await this.#sleep(Math.min(wait, this.#deadline - performance.now()));
      if (control.aborted) return this.#env.states.release(deployment.slot, reservation);
      if (performance.now() >= this.#deadline) {
        this.#env.states.release(deployment.slot, reservation);
        return this.#timedOut();
      }
      this.#attempts++;
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
    try {
      if (sent.error !== null) throw sent.error;
      await this.#env.adapterFor(deployment).call(call, gate);
      status = gate.status;
      error = null;
      return null;
    } catch (err) {
      if (request.control.aborted) return null;
      const failure = classify(err);
      if (failure.code === 'internal_error') this.#env.fault(request.requestId, err);
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
      if (performance.now() < this.#deadline) this.#weigh(deployment, reservation, failure);
      return failure;
    } finally {
      gate.close();
      trace?.attempted({ deployment: deployment.id, attempt: this.#attempts, op: sent.op, upstream: deployment.upstream, startedAt: this.#started, sentAt: call.sentAt, status, error, firstChunkAt: gate.firstContentAt });
      request.control.onAbort(null);
      this.#env.states.release(deployment.slot, reservation);
      this.#call = null;
    }
  }

  /** The operation and body for `deployment`; what `prepare` threw (a parameter its API cannot carry) is the attempt's failure, thrown in its try. */
  #prepare(deployment: Deployment): { op: Operation; body: Record<string, unknown>; error: unknown } {
    const request = this.#request;
    if (request.prepare === null) {
      request.body.model = deployment.upstream.upstreamModel;
      return { op: request.op, body: request.body, error: null };
    }
    try {
      return { ...request.prepare(deployment.upstream), error: null };
    } catch (error) {
      return { op: request.op, body: request.body, error };
    }
  }

  /** After a failure before any byte went out: true when the request is answered, false to try again. */
  #decide(deployment: Deployment, failure: AttemptFailure): boolean {
    this.#lastFailure = failure;
    if (performance.now() >= this.#deadline) {
      this.#timedOut();
      return true;
    }
    (this.#failed ??= []).push(deployment);
    (this.#endedAt ??= []).push(performance.now());
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
      const d = pick(chain[i] as Group, states, settings.strategy, now, this.#failed, this.#pick);
      if (d !== null) {
        this.#at = i;
        return d;
      }
    }
    if (this.#failed === null) return null;
    for (let i = this.#at; i < chain.length; i++) {
      const d = pick(chain[i] as Group, states, settings.strategy, now, null, this.#pick);
      if (d !== null) {
        this.#at = i;
        return d;
      }
    }
    return null;
  }

  /** How long to wait before trying `deployment` again: `retry_after` since this request's last attempt on it. */
  #waitBefore(deployment: Deployment): number {
    const failed = this.#failed;
    const retryAfterMs = this.#env.settings.retryAfterMs;
    if (failed === null || retryAfterMs === 0) return 0;
    const at = failed.lastIndexOf(deployment);
    return at === -1 ? 0 : (this.#endedAt as number[])[at] as number + retryAfterMs - performance.now();
  }

  /** A failure's weight on its deployment's shared state (the failure table's "cools" column). */
  #weigh(d: Deployment, reservation: Reservation, failure: AttemptFailure): void {
    const kind = failure.kind;
    // Logged for every deployment, a route rule's (which keeps no state) included.
    if (kind === 'auth') this.#notice('upstream_auth_failed', d, failure, 0);
    if (d.slot < 0 || (kind !== 'transient' && kind !== 'rate_limited' && kind !== 'auth')) return;
    const { states, settings } = this.#env;
    const cooldownMs = Math.max(settings.cooldownMs, Math.min(failure.retryAfterMs, MAX_PROVIDER_COOLDOWN_MS));
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
    if (this.#group === asked) this.client.routed(d.id, this.#attempts, null, d.labels, this.#waitedMs);
    else this.client.routed(d.id, this.#attempts, (this.#group as Group).name, { model: asked.name, provider: d.labels.provider }, this.#waitedMs);
  }

  /** The last failure, as the caller gets it: a provider answer as sent, otherwise the gateway's error. */
  #answer(failure: AttemptFailure): void {
    this.#routed();
    if (failure.answer !== null) {
      const { status, contentType, headers, body } = failure.answer;
      this.client.reply(status, contentType, headers, body, null, 0);
    } else {
      this.client.fail(gatewayErrorOf(failure), failure.headers);
    }
  }

  #timedOut(): void {
    if (this.#deployment !== null) this.#routed();
    this.client.fail({ code: 'upstream_timeout', message: 'the request exceeded its routing timeout (router_settings.timeout) across its attempts' }, NO_HEADERS);
  }

  /** Nothing can be tried now: the last failure if there was an attempt, else 503 with the time to the soonest end of a cooldown. */
  #unavailable(): void {
    if (this.#lastFailure !== null) return this.#answer(this.#lastFailure);
    const group = this.#request.group;
    const now = this.#env.now();
    let soonest = Infinity;
    for (const g of this.#chain) {
      for (const d of g.deployments) {
        const until = d.slot < 0 ? 0 : this.#env.states.cooldownUntil(d.slot);
        if (until > now) soonest = Math.min(soonest, until - now);
      }
    }
    const seconds = Number.isFinite(soonest) ? Math.max(1, Math.ceil(soonest / 1000)) : 1;
    this.client.routed(null, 0, null, (group.deployments[0] as Deployment).labels, 0);
    this.client.fail({ code: 'no_deployment_available', message: `no deployment of "${group.name}" or its fallbacks can take the request now (cooling down or at capacity)` }, ['retry-after', String(seconds)]);
  }

  /** Waits `ms`, or less when the client leaves. */
  #sleep(ms: number): Promise<void> {
    const { control } = this.#request;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        control.onAbort(null);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      control.onAbort(done);
    });
  }
}
