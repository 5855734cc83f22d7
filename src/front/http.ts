/**
 * Writing responses on uWS: status lines, the headers every response
 * carries (`Server`, `X-Request-ID`), JSON and error bodies. Every write
 * goes through `cork` so status, headers and body leave in one syscall.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uWebSockets.js';
import { copyPieces, piecesLength } from '../../protocol/channel.js';
import { errorBody, errorStatus, type ErrorCode } from '../errors.js';
import { SERVER_HEADER } from '../version.js';

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
  /** Called with the status once a whole response is sent (metrics for the operational routes). */
  onSent?: (status: number) => void;
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
}

/** Sends a whole response; a no-op once the client is gone. */
export function send(ex: Exchange, status: number, contentType: string, body: string | Uint8Array, extra?: readonly string[], closeConnection = false): void {
  if (ex.aborted) return;
  ex.res.cork(() => {
    writeHead(ex, status, contentType, extra);
    ex.res.end(body, closeConnection);
  });
  ex.onSent?.(status);
}

/** Bodies in pieces up to this size are joined in one buffer kept for it, then written with `end`. */
const JOIN_BYTES = 1024 * 1024;
let joinBuffer: Buffer | null = null;

/**
 * Sends a whole response given in pieces (an upstream body as it was read)
 * without a new buffer for it: a new buffer the size of the body per request
 * (226 KB for an embeddings answer) made V8 collect every ~50 ms. Up to 1 MiB
 * the pieces are copied into one buffer reused by every response and written
 * with `end`, which sends or copies every byte before it returns (uWS keeps
 * no reference to it), so the buffer is free again at once. Larger bodies go
 * piece by piece under one Content-Length (tryEnd), resumed as the socket
 * drains: one send per piece, but no copy of a body that may be 64 MiB.
 */
export function sendPieces(ex: Exchange, status: number, contentType: string, pieces: readonly Uint8Array[], extra?: readonly string[]): void {
  if (ex.aborted) return;
  const total = piecesLength(pieces);
  if (total <= JOIN_BYTES) {
    send(ex, status, contentType, copyPieces(pieces, (joinBuffer ??= Buffer.allocUnsafeSlow(JOIN_BYTES))), extra);
    return;
  }
  const { res } = ex;
  let index = 0;
  /** Body offset of pieces[index]. */
  let start = 0;
  /** Writes on from uWS's write offset; false when the socket is full (called again when it drains). */
  const pump = (): boolean => {
    while (index < pieces.length) {
      const piece = pieces[index] as Uint8Array;
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

export function sendError(ex: Exchange, code: ErrorCode, message?: string, extra?: readonly string[], closeConnection = false): void {
  send(ex, errorStatus(code), JSON_TYPE, errorBody(code, message), extra, closeConnection);
}
