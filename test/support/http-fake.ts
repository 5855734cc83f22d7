/**
 * The server half of the provider fakes (anthropic-upstream.ts,
 * azure-upstream.ts): a real HTTP server on 127.0.0.1 that reads each
 * request whole, records it (method, path, query, headers, JSON body, and
 * whether the client left before the answer was complete) and hands it to
 * the fake's handler, which answers in its provider's wire format.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fakeTimers, listenOnLoopback, onJsonBody } from './listen.js';
import { until } from './waits.js';

export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  /** The request target as sent (path and query, not decoded). */
  readonly target: string;
  readonly headers: IncomingMessage['headers'];
  /** Every header line as sent, [name, value, name, value, …] (node's rawHeaders: repeats kept, in order). */
  readonly rawHeaders: readonly string[];
  /** The body parsed as JSON ({} when there was none or it was not JSON). */
  readonly body: Record<string, unknown>;
  /** The body's bytes as received. */
  readonly raw: Buffer;
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  /** The answer was complete. */
  done: boolean;
}

/** Answers one request: `later` runs a step after a delay unless the server closed first; `alive` says whether the client is still there. */
export type FakeHandler = (request: FakeRequest, res: ServerResponse, tools: { later(ms: number, fn: () => void): void; alive(): boolean }) => void;

export interface FakeServer {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  readonly received: FakeRequest[];
  /** Requests whose answer is not complete and whose client is still there. */
  inFlight(): number;
  /** Polls `pred` every 5 ms; rejects after `timeoutMs`. */
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeServer(handler: FakeHandler): Promise<FakeServer> {
  const received: FakeRequest[] = [];
  const timers = fakeTimers();
  const later = timers.later;
  let open = 0;
  const server = http.createServer((req, res) => {
    onJsonBody(req, (body, raw) => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const record: FakeRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, target: req.url ?? '/', headers: req.headers, rawHeaders: req.rawHeaders, body, raw, aborted: false, done: false };
      received.push(record);
      open++;
      res.on('close', () => {
        open--;
        if (res.writableFinished) record.done = true;
        else record.aborted = true;
      });
      handler(record, res, { later, alive: () => !res.destroyed && !res.writableEnded });
    });
  });
  const { port, sockets } = await listenOnLoopback(server);
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    inFlight: () => open,
    async waitFor(pred, timeoutMs = 3000) {
      await until(pred, 'a condition on the fake', timeoutMs);
    },
    close: () =>
      new Promise<void>((resolve) => {
        timers.clear();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Writes SSE text in pieces: all at once (`intervalMs` 0), or one piece
 * every `intervalMs`; `onDone` after the last (the caller ends the answer
 * or breaks it off).
 */
export function writePieces(res: ServerResponse, pieces: readonly string[], intervalMs: number, later: (ms: number, fn: () => void) => void, alive: () => boolean, onDone: () => void): void {
  if (intervalMs === 0) {
    res.write(pieces.join(''));
    onDone();
    return;
  }
  let i = 0;
  const next = () => {
    if (!alive()) return;
    if (i === pieces.length) return onDone();
    res.write(pieces[i++]);
    later(intervalMs, next);
  };
  next();
}
