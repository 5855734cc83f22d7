/**
 * A TCP proxy on loopback in front of any server, to make it slow, hung, cut off or unreachable
 * without touching the server: "Redis made slow" (issue 37) is a Redis whose every chunk, both
 * ways, arrives `setDelay(ms)` late; "Redis hung" is `pause()` (connections stay open, nothing
 * moves, as a Redis stuck in a long command or a network that stopped delivering); a network cut
 * is `dropAll()`; a host that is down is `refuse(true)` (the listener closes, so a connect gets
 * ECONNREFUSED, as from a port nothing listens on).
 *
 * Order is kept in each direction whatever the delay does: a chunk leaves at its arrival + the
 * delay then in force, or after the chunk before it, whichever is later. A half-close (FIN) is
 * forwarded in order too. Node built-ins only.
 *
 * @example
 * const redis = await startRedis();
 * const proxy = await startDelayProxy(redis.port);
 * // The gateway talks to Redis through it:
 * const yaml = `router_settings: { redis_url: ${proxy.url('redis')} }\n…`;
 * proxy.setDelay(30);           // each round trip takes 2 × 30 ms or more: health pings over 50 ms, Redis counts as lost
 * proxy.setDelay(0);
 * proxy.pause();                // hung: connections open, no byte moves either way
 * proxy.resume();               // what was held is delivered, in order
 * proxy.dropAll();              // every live connection closed (reset: true for RST)
 * await proxy.refuse(true);     // new connections refused; live ones go on
 * await proxy.refuse(false);
 * await proxy.close();
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from './start-command.js';

export interface DelayProxy {
  readonly host: '127.0.0.1';
  /** Where to connect instead of the target. */
  readonly port: number;
  /** `<scheme>://127.0.0.1:<port>` (`proxy.url('redis')`), with `auth` (`:password@`) when given. */
  url(scheme: string, auth?: string): string;
  /** Delays each chunk by `ms` in both directions from now on (0: straight through); chunks already held keep their time. */
  setDelay(ms: number): void;
  /** Stops forwarding in both directions; connections stay open and new ones are accepted (and held too). */
  pause(): void;
  /** Forwards again, first what was held, in order. */
  resume(): void;
  /** Ends every live connection, both sides: a FIN, or with `reset` an RST (a network cut, a dead peer). */
  dropAll(options?: { reset?: boolean }): void;
  /**
   * `true`: the listener closes, so new connections are refused (ECONNREFUSED); live ones go on.
   * `false`: it listens again on the same port. Resolves once the change is in effect.
   */
  refuse(on: boolean): Promise<void>;
  /** Connections open now (each is a client side and a target side). */
  connections(): number;
  /** Connections accepted since the start. */
  accepted(): number;
  /** Chunks held now, both directions (by a delay or a pause): a test waits for this to know a reply reached the proxy. */
  held(): number;
  /** Closes the listener and every connection. */
  close(): Promise<void>;
}

/** One direction of one connection: chunks in order, each with the time it is due. */
class Lane {
  readonly queue: Array<{ due: number; chunk: Buffer | 'end' }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly to: Socket,
    private readonly state: { delayMs: number; paused: boolean },
  ) {}

  push(chunk: Buffer | 'end'): void {
    // FIFO: a chunk due earlier than the one before it (the delay shrank) waits for it.
    this.queue.push({ due: performance.now() + this.state.delayMs, chunk });
    this.pump();
  }

  /** Delivers what is due, then waits for the next; nothing while paused. */
  pump(): void {
    if (this.state.paused || this.to.destroyed) return;
    const now = performance.now();
    while (this.queue.length > 0 && (this.queue[0] as { due: number }).due <= now) {
      const { chunk } = this.queue.shift() as { chunk: Buffer | 'end' };
      if (chunk === 'end') this.to.end();
      else this.to.write(chunk);
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    const next = this.queue[0];
    if (next !== undefined) this.timer = setTimeout(() => this.pump(), Math.max(1, Math.ceil(next.due - now)));
  }

  stop(): void {
    clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

interface Link {
  readonly client: Socket;
  readonly target: Socket;
  readonly lanes: readonly [Lane, Lane];
}

/**
 * A proxy on a free loopback port in front of `target` (a port on 127.0.0.1, or host and port).
 *
 * @example
 * const proxy = await startDelayProxy(redis.port);
 */
export async function startDelayProxy(target: number | { host: string; port: number }): Promise<DelayProxy> {
  const to = typeof target === 'number' ? { host: '127.0.0.1', port: target } : target;
  const state = { delayMs: 0, paused: false };
  const links = new Set<Link>();
  let accepted = 0;

  const onConnection = (client: Socket) => {
    accepted++;
    client.setNoDelay(true);
    const upstream = connect({ host: to.host, port: to.port, allowHalfOpen: true, noDelay: true });
    const toTarget = new Lane(upstream, state);
    const toClient = new Lane(client, state);
    const link: Link = { client, target: upstream, lanes: [toTarget, toClient] };
    links.add(link);
    // The target side writes are buffered by net until it connects: the client may talk at once.
    client.on('data', (chunk: Buffer) => toTarget.push(chunk));
    upstream.on('data', (chunk: Buffer) => toClient.push(chunk));
    client.on('end', () => toTarget.push('end'));
    upstream.on('end', () => toClient.push('end'));
    const teardown = () => {
      if (!links.delete(link)) return;
      toTarget.stop();
      toClient.stop();
      client.destroy();
      upstream.destroy();
    };
    // An error (a reset, a refused target) ends the pair at once, held chunks dropped. A clean close is a half-close
    // at a time, each forwarded in order by the lanes (a FIN is an 'end' chunk): the pair is done once both sides closed.
    client.on('error', teardown);
    upstream.on('error', teardown);
    const onClose = () => {
      if (client.destroyed && upstream.destroyed) teardown();
    };
    client.on('close', onClose);
    upstream.on('close', onClose);
  };

  let server: Server = createServer({ allowHalfOpen: true }, onConnection);
  const listen = (srv: Server, on: number) =>
    new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(on, '127.0.0.1', () => {
        srv.off('error', reject);
        resolve();
      });
    });
  // A port outside the kernel's ephemeral range: refuse(false) listens on it again, and no other test's listen(0) can take it meanwhile.
  let port = 0;
  for (let tries = 1; port === 0; tries++) {
    const candidate = await freePort();
    try {
      await listen(server, candidate);
      port = candidate;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || tries >= 5) throw error;
    }
  }
  let listening = true;

  const dropAll = (options: { reset?: boolean } = {}) => {
    for (const link of [...links]) {
      for (const lane of link.lanes) lane.stop();
      links.delete(link);
      for (const s of [link.client, link.target]) {
        if (options.reset) s.resetAndDestroy();
        else s.destroy();
      }
    }
  };
  const closeListener = () => new Promise<void>((resolve) => server.close(() => resolve()));

  return {
    host: '127.0.0.1',
    port,
    url: (scheme, auth) => `${scheme}://${auth === undefined ? '' : `${auth}@`}127.0.0.1:${port}`,
    setDelay(ms) {
      if (!(ms >= 0)) throw new Error(`setDelay: ms must be 0 or more, got ${ms}`);
      state.delayMs = ms;
    },
    pause() {
      state.paused = true;
    },
    resume() {
      state.paused = false;
      for (const link of links) for (const lane of link.lanes) lane.pump();
    },
    dropAll,
    async refuse(on) {
      if (on && listening) {
        listening = false;
        // The listening socket closes at once; close()'s callback would wait for the live connections, which go on.
        server.close();
        return;
      }
      if (!on && !listening) {
        server = createServer({ allowHalfOpen: true }, onConnection);
        await listen(server, port);
        listening = true;
      }
    },
    connections: () => links.size,
    accepted: () => accepted,
    held: () => [...links].reduce((n, link) => n + link.lanes[0].queue.length + link.lanes[1].queue.length, 0),
    async close() {
      dropAll();
      if (listening) {
        listening = false;
        await closeListener();
      }
    },
  };
}
