/** Large uploads to a gateway, and the check of a gateway-made error body (test/hostile-input.test.ts, test/stress/upload-bound.test.ts). */
import http from 'node:http';
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
 */
export function uploadTo(port: number, key: string, path: string, total: number, framing: 'content-length' | 'chunked'): Promise<UploadResult> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    if (framing === 'content-length') headers['content-length'] = String(total);
    else headers['transfer-encoding'] = 'chunked';
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers });
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

