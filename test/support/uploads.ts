/** Large uploads to a gateway, and the check of a gateway-made error body (test/hostile-input.test.ts, test/early-errors.test.ts). */
import http from 'node:http';
import net from 'node:net';
import { expect } from 'vitest';

type Json = Record<string, unknown>;
export interface ErrorObject {
  message: string;
  type: string;
  code: string | null;
}


/** Checks that `text` is exactly an error object; gateway-made errors (`gatewayMade`) have type gateway_error and a string code. */
export function checkErrorBody(text: string, context: string, gatewayMade = true): ErrorObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${context}: the error body is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
  expect(parsed, context).toBeTypeOf('object');
  expect(Object.keys(parsed as Json), context).toEqual(['error']);
  const error = (parsed as { error: ErrorObject }).error;
  expect(error, context).toBeTypeOf('object');
  expect(typeof error.message, context).toBe('string');
  expect(error.message.length, context).toBeGreaterThan(0);
  expect(typeof error.type, context).toBe('string');
  if (gatewayMade || error.type === 'gateway_error') {
    expect(error.type, context).toBe('gateway_error');
    expect(typeof error.code, context).toBe('string');
  } else {
    expect(error.code === null || typeof error.code === 'string', context).toBe(true);
  }
  return error;
}

export interface UploadResult {
  status: number;
  body: string;
  /** Bytes the client socket actually wrote before the server's answer / close. */
  bytesWrittenAtResponse: number;
  bytesWrittenTotal: number;
  msToResponse: number;
  /** ms from the response to the connection closing; null if it stayed open. */
  msResponseToClose: number | null;
}

/**
 * Streams `total` bytes of body in 64 KiB chunks (honouring backpressure),
 * declared by Content-Length or chunked; stops writing when the answer comes.
 * Without an `agent`, on a connection of its own that asks to close.
 */
export function uploadTo(port: number, key: string, path: string, total: number, framing: 'content-length' | 'chunked', agent?: http.Agent): Promise<UploadResult> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    if (framing === 'content-length') headers['content-length'] = String(total);
    else headers['transfer-encoding'] = 'chunked';
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: agent ?? false, headers });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    chunk.write('{"model":"mock-chat","messages":[{"role":"user","content":"');
    let queued = 0;
    let responded = false;
    let result: Omit<UploadResult, 'msResponseToClose' | 'bytesWrittenTotal'> | null = null;
    let respondedAt = 0;
    const t0 = performance.now();
    const giveUp = setTimeout(() => {
      req.destroy();
      reject(new Error(`upload: no answer within 20 s (queued ${queued} bytes)`));
    }, 20_000);
    const pump = (): void => {
      while (!responded && !req.destroyed && queued < total) {
        queued += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!responded && queued >= total) req.end();
    };
    req.on('socket', (socket) => {
      socket.on('close', () => {
        clearTimeout(giveUp);
        if (!result) {
          reject(new Error(`upload: connection closed without an answer after ${socket.bytesWritten} bytes`));
          return;
        }
        resolve({ ...result, bytesWrittenTotal: socket.bytesWritten, msResponseToClose: performance.now() - respondedAt });
      });
    });
    req.on('response', (res) => {
      responded = true;
      respondedAt = performance.now();
      const bytesWrittenAtResponse = req.socket?.bytesWritten ?? -1;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('error', () => undefined);
      res.on('end', () => {
        result = { status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8'), bytesWrittenAtResponse, msToResponse: respondedAt - t0 };
        // The connection must close on its own; if it does not within 3 s, report it open.
        setTimeout(() => {
          if (!req.socket?.destroyed) {
            clearTimeout(giveUp);
            resolve({ ...(result as NonNullable<typeof result>), bytesWrittenTotal: req.socket?.bytesWritten ?? -1, msResponseToClose: null });
            req.destroy();
          }
        }, 3000);
      });
    });
    req.on('error', () => undefined); // EPIPE/ECONNRESET once the server closed: expected
    pump();
  });
}


export interface AfterAnswerResult {
  /** The answer's head (status line and headers), lower-cased; '' if none came. */
  head: string;
  /** The answer's body, de-chunked when chunked; null when it did not end (no last chunk, or short of Content-Length). */
  body: string | null;
  /** The socket's error code (ECONNRESET, EPIPE) if it had one. */
  error: string | null;
  /** The server closed the connection (FIN or reset) before the give-up. */
  closedByServer: boolean;
  /** Body bytes written after the first byte of the answer arrived. */
  bytesAfterAnswer: number;
  /** ms from the first byte of the answer to the last write, and to the close; null if there was none. */
  msAnswerToStop: number | null;
  msAnswerToClose: number | null;
}

/**
 * On a raw connection, sends `head` (which frames the body: `Transfer-Encoding:
 * chunked` or a Content-Length) and then a body as fast as the socket takes
 * it, and goes on sending for `sendOnMs` after the answer's first byte arrives
 * (Infinity: until the server closes), then stops without closing. With
 * 'until-whole' it sends until the answer is whole, then stops and closes its
 * side, as curl does. Collects the answer until the server closes or `giveUpMs` pass.
 */
export function sendOnAfterAnswer(port: number, head: string, sendOnMs: number | 'until-whole', giveUpMs: number): Promise<AfterAnswerResult> {
  const chunked = /transfer-encoding: chunked/i.test(head);
  const piece = Buffer.alloc(64 * 1024, 0x61);
  const frame = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let answeredAt = 0;
    let stoppedAt = 0;
    let bytesAfterAnswer = 0;
    let closedByServer = false;
    let error: string | null = null;
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs);
    let whole = false;
    const sending = () => answeredAt === 0 || (sendOnMs === 'until-whole' ? !whole : performance.now() - answeredAt < sendOnMs);
    const pump = (): void => {
      while (!socket.destroyed && !socket.writableEnded && sending()) {
        if (answeredAt !== 0) bytesAfterAnswer += frame.length;
        if (!socket.write(frame)) {
          socket.once('drain', pump);
          return;
        }
        // After the answer, a frame every 5 ms (13 MB/s): a client slow to see the answer, not a flood.
        if (answeredAt !== 0) {
          setTimeout(pump, 5);
          return;
        }
      }
      if (stoppedAt === 0 && answeredAt !== 0) stoppedAt = performance.now();
    };
    socket.on('data', (d: Buffer) => {
      if (answeredAt === 0) answeredAt = performance.now();
      received.push(d);
      if (sendOnMs === 'until-whole' && !whole && parseAnswer(Buffer.concat(received).toString('latin1')).body !== null) {
        whole = true;
        stoppedAt = performance.now();
        socket.end();
      }
    });
    socket.on('end', () => (closedByServer = true));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      closedByServer = true;
      error = err.code ?? err.message;
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      const closedAt = performance.now();
      const { head: answerHead, body } = parseAnswer(Buffer.concat(received).toString('latin1'));
      resolve({
        head: answerHead,
        body,
        error,
        closedByServer,
        bytesAfterAnswer,
        msAnswerToStop: stoppedAt === 0 ? null : stoppedAt - answeredAt,
        msAnswerToClose: closedByServer && answeredAt !== 0 ? closedAt - answeredAt : null,
      });
    });
    socket.write(head);
    pump();
  });
}

/** Splits a raw HTTP/1.1 answer into its head (lower-cased) and its whole body (see AfterAnswerResult). */
function parseAnswer(raw: string): { head: string; body: string | null } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return { head: raw.toLowerCase(), body: null };
  const head = raw.slice(0, end).toLowerCase();
  let rest = raw.slice(end + 4);
  const length = /content-length: (\d+)/.exec(head);
  if (length) return { head, body: rest.length >= Number(length[1]) ? rest.slice(0, Number(length[1])) : null };
  let body = '';
  for (;;) {
    const line = rest.indexOf('\r\n');
    if (line < 0) return { head, body: null };
    const size = Number.parseInt(rest.slice(0, line), 16);
    if (!Number.isFinite(size)) return { head, body: null };
    if (size === 0) return { head, body: rest.slice(line + 2, line + 4) === '\r\n' ? body : null };
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}
