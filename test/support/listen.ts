/** The listening part every fake upstream shares. */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * Listens on an ephemeral loopback port and keeps the open sockets, so a fake
 * can close or reset its connections at will (a reset mid-body, a quick close).
 */
export async function listenOnLoopback(server: Server): Promise<{ port: number; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { port: (server.address() as AddressInfo).port, sockets };
}

/** Reads a request whole, then calls `done` with its body as JSON ({} when it is empty or not JSON) and its bytes as read (a signature covers those). */
export function onJsonBody(req: IncomingMessage, done: (body: Record<string, unknown>, raw: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      // {} it is
    }
    done(body, raw);
  });
}

/** Timers a fake can clear all at once when it closes: `later(ms, fn)` runs fn unless `clear()` came first. */
export function fakeTimers(): { later(ms: number, fn: () => void): void; clear(): void } {
  const timers = new Set<NodeJS.Timeout>();
  return {
    later(ms, fn) {
      const t = setTimeout(() => {
        timers.delete(t);
        fn();
      }, ms);
      timers.add(t);
    },
    clear() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
