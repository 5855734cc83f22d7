/**
 * HTTP to OpenAI-compatible upstreams over undici's dispatcher API: one
 * keep-alive Pool per (origin, connect timeout), reused by every call of
 * this worker. Each way of failing maps to its own error code.
 *
 * An exchange is undici's handler interface driven directly, not
 * `Pool.request`: that wraps every response in a Readable stream, an async
 * iterator and an abort-signal listener, which cost more per call than the
 * rest of the worker's work (the profile in loadtest/RESULTS.md).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
// Pool's own module, not undici's index: the index loads fetch, WebSocket, caches and mocks
// as well, which is 3× the load time (150 ms against 50 ms on one core) and heap in every
// worker. Only `dispatch` is used, which Pool has without the index's request API. A static
// import, so that tools/bundle.mjs bundles it into the worker.
import Pool from 'undici/lib/dispatcher/pool.js';
import { GatewayError, type ErrorCode } from '../protocol/errors.js';
import { pinnedLookup } from '../protocol/pinned-lookup.js';

type Pool = InstanceType<typeof Pool>;

const pools = new Map<string, Pool>();

/**
 * The pool of an origin, or of one address of it (`connectTo`, a replica found by DNS). Pinned, the
 * socket's lookup answers that address, so the connection goes there while undici still takes
 * the Host header and the TLS server name (SNI, and the certificate's check) from the origin.
 */
function poolFor(origin: string, connectMs: number, connectTo: string | null): Pool {
  // The key of a deployment without replicas is what it was before replicas existed: it pays nothing for them.
  const key = connectTo === null ? `${origin}|${connectMs}` : `${origin}|${connectMs}|${connectTo}`;
  let pool = pools.get(key);
  if (!pool) {
    const connect = connectTo === null ? { timeout: connectMs } : { timeout: connectMs, lookup: pinnedLookup(connectTo) };
    pool = new Pool(origin, { connect, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });
    pools.set(key, pool);
    if (connectTo !== null) pinned.set(key, connectTo);
  }
  return pool;
}

/** The pools pinned to an address, by key: closed once the config no longer has the address (`forgetAddresses`). */
const pinned = new Map<string, string>();

/**
 * Closes the pools pinned to addresses no replica of `routing` has any more: a DNS set's pods come
 * and go, and a pool per address ever seen would pile up. `close` lets the requests in flight on
 * such a pool finish; a retry of a call still on the old config makes a new one.
 */
export function forgetAddresses(routing: { readonly aliases: readonly { readonly connectTo: string | null }[] }): void {
  if (pinned.size === 0) return;
  const live = new Set(routing.aliases.map((route) => route.connectTo));
  for (const [key, address] of pinned) {
    if (live.has(address)) continue;
    pinned.delete(key);
    const pool = pools.get(key);
    pools.delete(key);
    pool?.close().catch(noop);
  }
}

const targets = new Map<string, { origin: string; basePath: string }>();

function parseBase(apiBase: string): { origin: string; basePath: string } {
  let target = targets.get(apiBase);
  if (!target) {
    const url = new URL(apiBase);
    target = { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
    targets.set(apiBase, target);
  }
  return target;
}

export interface UpstreamHead {
  readonly status: number;
  /** Lower-case names, as undici parses them. */
  readonly headers: IncomingHttpHeaders;
}

/** What an exchange tells its caller besides the body: for the per-phase deadlines. */
export interface ExchangeActivity {
  headersArrived(): void;
  chunkArrived(): void;
}

const noop = (): void => {};

/**
 * One upstream request and its response. `head` resolves when the response
 * headers arrive. The body is collected whole, up to `limit` bytes, into
 * `body`; or, when `relayWhen` says so for the response's head, passed on
 * chunk by chunk to the callback given to `relay` (chunks that arrive
 * before it is given are held for it). `abort` ends the exchange at any
 * point with the given error; so does any failure of the connection.
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler {
  readonly head: Promise<UpstreamHead>;
  /**
   * The collected body in the pieces undici read it in (not joined: a thread hop joins them,
   * the front writes them as they are), or no pieces at the end of a relayed one; rejects
   * with the exchange's failure. The pieces are undici's read buffers: read them, never
   * transfer them.
   */
  readonly body: Promise<readonly Uint8Array[]>;
  readonly #limit: number;
  readonly #activity: ExchangeActivity;
  readonly #relayWhen: ((head: UpstreamHead) => boolean) | null;
  #resolveHead!: (head: UpstreamHead) => void;
  #rejectHead!: (err: unknown) => void;
  #resolveBody!: (body: readonly Uint8Array[]) => void;
  #rejectBody!: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | null = null;
  #failure: unknown = null;
  /** The response ended or failed: nothing more comes from undici. */
  #settled = false;
  /** `body` resolved: the caller has the whole body, and nothing can fail it any more. */
  #delivered = false;
  #relaying = false;
  #relay: ((chunk: Buffer) => void) | null = null;
  #chunks: Buffer[] = [];
  #received = 0;
  #paused = false;

  constructor(limit: number, activity: ExchangeActivity, relayWhen: ((head: UpstreamHead) => boolean) | null = null) {
    this.#limit = limit;
    this.#activity = activity;
    this.#relayWhen = relayWhen;
    this.head = new Promise((resolve, reject) => {
      this.#resolveHead = resolve;
      this.#rejectHead = reject;
    });
    this.body = new Promise((resolve, reject) => {
      this.#resolveBody = resolve;
      this.#rejectBody = reject;
    });
    // A caller that stops after `head` (a redirect, a 5xx) never awaits these: no unhandled rejection.
    this.head.catch(noop);
    this.body.catch(noop);
  }

  /** Starts passing a relayed body on (only after `head`, and only when `relayWhen` chose relaying). */
  relay(onChunk: (chunk: Buffer) => void): void {
    this.#relay = onChunk;
    const early = this.#chunks;
    this.#chunks = [];
    for (const chunk of early) {
      if (this.#failure !== null) return;
      onChunk(chunk);
    }
    if (this.#settled && this.#failure === null) this.#deliver(NONE);
  }

  pause(): void {
    this.#paused = true;
    this.#controller?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#controller?.resume();
  }

  /**
   * Ends the exchange now (a deadline, the client left, a bad body); both promises reject with `reason`.
   * A relayed response can have ended before `relay` passed its chunks on (all of it in one socket
   * read): a bad chunk still fails it then, though there is nothing left to stop upstream.
   */
  abort(reason: unknown): void {
    if (this.#failure !== null || this.#delivered) return;
    const reading = !this.#settled;
    this.#fail(reason);
    if (reading) this.#controller?.abort(asError(reason));
  }

  /** Drops whatever has not been read yet (the connection goes with it); nothing once the response is complete. */
  release(): void {
    if (!this.#settled) this.abort(new GatewayError('upstream_reset', 'the response was not read to its end'));
  }

  // ── undici's handler interface ──

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Aborted while queued for a connection: undici lets go of it only here.
    if (this.#failure !== null) controller.abort(asError(this.#failure));
    else if (this.#paused) controller.pause();
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    if (this.#settled) return;
    this.#activity.headersArrived();
    const head: UpstreamHead = { status, headers };
    this.#relaying = this.#relayWhen?.(head) ?? false;
    this.#resolveHead(head);
    const declared = Number(headers['content-length']);
    if (!this.#relaying && Number.isFinite(declared) && declared > this.#limit) this.abort(new GatewayError('upstream_response_too_large'));
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#activity.chunkArrived();
    if (this.#relay) {
      this.#relay(chunk);
      return;
    }
    // A relayed body is bounded per event by its reader; before `relay` is given only one socket read can arrive.
    if (!this.#relaying) {
      this.#received += chunk.length;
      if (this.#received > this.#limit) {
        this.abort(new GatewayError('upstream_response_too_large'));
        return;
      }
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    this.#settled = true;
    if (!this.#relaying) {
      this.#deliver(this.#chunks);
      this.#chunks = [];
    } else if (this.#relay) this.#deliver(NONE);
    // else: `relay` resolves it once it has passed on the held chunks.
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.#settled) this.#fail(err);
  }

  #deliver(body: readonly Uint8Array[]): void {
    this.#delivered = true;
    this.#resolveBody(body);
  }

  #fail(reason: unknown): void {
    this.#settled = true;
    this.#failure = reason;
    this.#chunks = [];
    this.#rejectHead(reason);
    this.#rejectBody(reason);
  }
}

const NONE: readonly Uint8Array[] = [];
const asError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

/**
 * Starts one upstream call. Its deadlines are the caller's (workers/deadlines.ts, or the probe's
 * timer): undici's own headers and body timeouts are off. They would only repeat those, later,
 * and cost every request two of undici's coarse timers, which it keeps for up to a second after
 * they are cleared, so each survives into the old generation as garbage (3/4 of what a worker
 * promoted under chat at concurrency 64).
 */
export function upstreamExchange(
  apiBase: string,
  connectTo: string | null,
  connectMs: number,
  method: 'GET' | 'POST',
  path: string,
  body: string | null,
  headers: Record<string, string>,
  exchange: UpstreamExchange,
): void {
  const { origin, basePath } = parseBase(apiBase);
  poolFor(origin, connectMs, connectTo).dispatch({ method, path: basePath + path, headers, body, headersTimeout: 0, bodyTimeout: 0 }, exchange);
}

const CODES: Record<string, ErrorCode> = {
  UND_ERR_CONNECT_TIMEOUT: 'upstream_connect_timeout',
  ECONNREFUSED: 'upstream_unreachable',
  ENOTFOUND: 'upstream_unreachable',
  EAI_AGAIN: 'upstream_unreachable',
  EHOSTUNREACH: 'upstream_unreachable',
  ENETUNREACH: 'upstream_unreachable',
};

/**
 * Maps an undici or socket error to a gateway error. `answered` tells
 * whether response headers had arrived: a reset before them means the
 * provider could not be reached, after them that it broke off.
 */
export function toUpstreamError(err: unknown, answered: boolean): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: string } | null)?.code ?? '';
  const mapped = CODES[code];
  if (mapped) return new GatewayError(mapped);
  return new GatewayError(answered ? 'upstream_reset' : 'upstream_unreachable');
}
