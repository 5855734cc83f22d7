/**
 * Writing responses on uWS: status lines, the headers every response
 * carries (`Server`, `X-Request-ID`), JSON and error bodies. Every write
 * goes through `cork` so status, headers and body leave in one syscall.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { CutBody } from './body.js';
import { joinForNow, payloadLength, REUSED_JOIN_BYTES, type Payload } from '../../protocol/channel.js';
import { ERRORS, errorBody, errorStatus, type ErrorCode } from '../../protocol/errors.js';
import { gatewayError } from '../../protocol/anthropic-errors.js';
import { SERVER_HEADER } from '../../protocol/version.js';
import type { RoutingFacts } from '../../protocol/frames.js';

const statusLines = new Map<number, string>();

/** `404` → `404 Not Found`, cached: uWS wants the whole status line. */
export function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    statusLines.set(status, line);
  }
  return line;
}

export const JSON_TYPE = 'application/json';

/** What every response needs to know about its request. */
export interface Exchange {
  readonly res: HttpResponse;
  readonly requestId: string;
  /** Set when the client went away; nothing may be written after. */
  aborted: boolean;
  /** Set once the status line is written. */
  started: boolean;
  /** The request asked for a close (`asksToClose`); read where a body may be cut at a discard bound (`sendLingering`). */
  closeAsked?: boolean;
  /** Called with the status once a whole response is sent (metrics for the operational routes). */
  onSent?: (status: number) => void;
  /** Provider routes, once a worker routed the request: written as the x-switchyard-* headers. */
  routing?: RoutingFacts | null;
  /** Provider routes: performance.now() when the body, read in full, went to a worker (the overhead's start). */
  calledAt?: number;
  /** Provider routes: the overhead written in x-switchyard-overhead-ms, in ms; -1 until the headers are. */
  overheadMs?: number;
  /**
   * The request speaks Anthropic's API (a Messages route, or any request with `anthropic-version`):
   * its errors are in Anthropic's shape (CONTRACT.md, Anthropic Messages API (inbound), Errors).
   */
  anthropic?: boolean;
}

/** spec 000, Response headers: `Server` always, `X-Request-ID` always. */
export function writeHead(ex: Exchange, status: number, contentType: string, extra?: readonly string[]): void {
  const { res } = ex;
  ex.started = true;
  res.writeStatus(statusLine(status));
  res.writeHeader('server', SERVER_HEADER);
  res.writeHeader('x-request-id', ex.requestId);
  res.writeHeader('content-type', contentType);
  if (extra) for (let i = 0; i < extra.length; i += 2) res.writeHeader(extra[i] as string, extra[i + 1] as string);
  const routing = ex.routing;
  if (routing) ex.overheadMs = writeRouting(res, routing, ex.calledAt ?? 0);
}

/** CONTRACT.md, Routing for high volume: who served a routed response, on every one of them; returns the overhead written. */
function writeRouting(res: HttpResponse, routing: RoutingFacts, calledAt: number): number {
  if (routing.deployment !== null) res.writeHeader('x-switchyard-deployment', headerValue(routing.deployment));
  res.writeHeader('x-switchyard-attempts', ATTEMPTS[routing.attempts] ?? String(routing.attempts));
  if (routing.fallback !== null) res.writeHeader('x-switchyard-fallback', headerValue(routing.fallback));
  // The gateway's own share of the time to these headers: since the body went to a worker, less the time
  // the worker spent waiting on upstreams (RoutingFacts.waitedMs); milliseconds, to the microsecond.
  const overheadMs = Math.max(0, performance.now() - calledAt - routing.waitedMs);
  res.writeHeader('x-switchyard-overhead-ms', overheadMs.toFixed(3));
  return overheadMs;
}

const ATTEMPTS = Array.from({ length: 16 }, (_, n) => String(n));
const VISIBLE = /^[\x20-\x7e]*$/;

/** Ids and group names as they are when they are printable ASCII (config ids are), else percent-encoded (an alias may be any text). */
function headerValue(value: string): string {
  return VISIBLE.test(value) ? value : encodeURIComponent(value);
}

/**
 * Whether uWS will close this connection as soon as an answer is whole: its own test, a Connection
 * header of five characters (HTTP/1.0 counts too, but this build never serves it).
 */
export function asksToClose(req: HttpRequest): boolean {
  return req.getHeader('connection').length === 5;
}

/**
 * What becomes of the connection after an answer: kept alive, closed at once,
 * or closed once the client stops sending a body cut at a discard bound.
 */
export type AfterAnswer = 'keep' | 'close' | CutBody;

/** Sends a whole response; a no-op once the client is gone. */
export function send(ex: Exchange, status: number, contentType: string, body: string | Uint8Array, extra?: readonly string[], after: AfterAnswer = 'keep'): void {
  if (ex.aborted) return;
  if (after instanceof CutBody) return sendLingering(ex, status, contentType, body, extra, after);
  ex.res.cork(() => {
    writeHead(ex, status, contentType, extra);
    ex.res.end(body, after === 'close');
  });
  ex.onSent?.(status);
}

/**
 * An answer to a client that may still be sending (body.ts, CutBody): the
 * connection must not close under it. A keep-alive request gets the whole
 * answer at once with `Connection: close`; uWS keeps the connection and drops
 * the rest of the body, and the client closes when it has read the answer
 * (curl goes on sending until the answer is whole). A request that asked for
 * a close would be closed by uWS as soon as its answer is whole, and
 * `end(…, true)` after a `write` puts uWS's `Connection: close` line inside
 * the body; so its answer goes out chunked, all but its last (empty) chunk,
 * and the last chunk, with uWS's close, waits until the client is quiet. One
 * that keeps sending past the linger bounds is cut off.
 */
function sendLingering(ex: Exchange, status: number, contentType: string, body: string | Uint8Array, extra: readonly string[] | undefined, cut: CutBody): void {
  const { res } = ex;
  const whole = ex.closeAsked !== true;
  res.cork(() => {
    writeHead(ex, status, contentType, extra);
    res.writeHeader('connection', 'close');
    if (whole) res.end(body);
    else res.write(body);
  });
  ex.onSent?.(status);
  if (whole) return;
  cut.whenOver((quietly) => {
    if (ex.aborted) return;
    if (quietly) res.cork(() => res.end());
    else res.close();
  });
}

/**
 * Sends a whole response: one buffer, or an upstream body in the pieces it
 * was read in (inline mode), without a new buffer the size of the body: that
 * per request (226 KB for an embeddings answer) made V8 collect every ~50 ms.
 * Pieces up to 1 MiB are joined in the thread's reused buffer (joinForNow)
 * and written with `end`, which sends or copies every byte before it returns.
 * Larger bodies go piece by piece under one Content-Length (tryEnd), resumed
 * as the socket drains: one send per piece, but no copy of a body that may
 * be 64 MiB.
 */
export function sendBody(ex: Exchange, status: number, contentType: string, body: Payload, extra?: readonly string[]): void {
  if (body instanceof Uint8Array) return send(ex, status, contentType, body, extra);
  const total = payloadLength(body);
  if (total <= REUSED_JOIN_BYTES || body.length === 1) return send(ex, status, contentType, joinForNow(body), extra);
  if (ex.aborted) return;
  const { res } = ex;
  let index = 0;
  /** Body offset of pieces[index]. */
  let start = 0;
  /** Writes on from uWS's write offset; false when the socket is full (called again when it drains). */
  const pump = (): boolean => {
    while (index < body.length) {
      const piece = body[index] as Uint8Array;
      const written = res.getWriteOffset() - start;
      const [ok, done] = res.tryEnd(written > 0 ? piece.subarray(written) : piece, total);
      if (done) return true;
      if (!ok) return false;
      start += piece.byteLength;
      index++;
    }
    return true;
  };
  let drained = true;
  res.cork(() => {
    writeHead(ex, status, contentType, extra);
    drained = pump();
  });
  if (!drained) res.onWritable(() => ex.aborted || pump());
  ex.onSent?.(status);
}

export function sendJson(ex: Exchange, status: number, value: unknown): void {
  send(ex, status, JSON_TYPE, JSON.stringify(value));
}

export function sendError(ex: Exchange, code: ErrorCode, message?: string, extra?: readonly string[], after: AfterAnswer = 'keep'): void {
  send(ex, errorStatus(code), JSON_TYPE, errorBodyFor(ex, code, message), extra, after);
}

/** The body of an error answer: the compatible envelope, or Anthropic's for a request that speaks its API. */
export function errorBodyFor(ex: Pick<Exchange, 'anthropic' | 'requestId'>, code: ErrorCode, message?: string): string {
  if (ex.anthropic !== true) return errorBody(code, message);
  return gatewayError({ code, message: message ?? ERRORS[code].message }, ex.requestId).body;
}
