/**
 * HTTP/1.1 over a raw TCP socket, for what fetch and node:http refuse to
 * send (repeated framing headers, bare CR/LF, pipelining in one write) and
 * for watching exactly what the server writes and when it closes.
 */
import net from 'node:net';
import { MARGIN_MS } from './waits.js';

/**
 * When uWS's idle timeout closes a connection that sent nothing more: its timeout is 10 s, swept
 * every 4 s, so 8 to 12 s after the last byte it took as activity (the lower bound leaves 0.2 s
 * for the clocks). uWS's own constant, which the gateway cannot configure.
 */
export const UWS_IDLE_CLOSE_MS = { min: 7_800, max: 12_000 + MARGIN_MS } as const;

export interface RawResult {
  /** Every byte the server sent, as latin1. */
  out: string;
  /** The server ended the connection (FIN or RST) before we gave up. */
  closedByServer: boolean;
  /** ms from the write to the close (ours or the server's). */
  ms: number;
  /** The socket error's code, if the server reset the connection. */
  error: string | null;
}

/**
 * Writes `payload` in one write on a fresh connection and collects the
 * answer until the server closes it, or until `waitMs` pass (then we close).
 */
export function raw(port: number, payload: string | Buffer, waitMs = 1500): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedByServer = false;
    let error: string | null = null;
    const t0 = performance.now();
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => {
      closedByServer = true;
      socket.destroy();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      closedByServer = true;
      error = err.code ?? err.message;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ out: Buffer.concat(chunks).toString('latin1'), closedByServer, ms: performance.now() - t0, error });
    });
    socket.write(payload);
  });
}

/** Status codes of the responses in a raw HTTP/1.1 byte stream, in order (responses follow each other without a newline). */
export const statusCodes = (out: string): number[] => [...out.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

/** The bodies of the Content-Length-framed responses in a raw byte stream, in order; stops at anything else. */
export function rawBodies(out: string): string[] {
  const bodies: string[] = [];
  let rest = out;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.slice(0, end);
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
    if (!Number.isFinite(length)) break;
    bodies.push(rest.slice(end + 4, end + 4 + length));
    rest = rest.slice(end + 4 + length);
  }
  return bodies;
}
