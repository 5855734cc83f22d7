/**
 * Redis' wire protocol (RESP2), just enough for tests to talk to a real `redis-server` without a
 * client library: the support modules and their self-tests send PING, SET, GET, CLIENT KILL… and
 * read the reply. The gateway's own client (node-redis) is the feature's; this is for the tests'
 * side of the wire, and for looking at Redis behind the gateway's back.
 *
 * @example
 * // One command on a connection of its own:
 * expect(await respCommand(redis.port, ['PING'])).toBe('PONG');
 * // Several over one connection (replies come back in order; a round trip can be timed alone):
 * const conn = await respConnect(redis.port);
 * await conn.send(['SET', 'k', 'v']);
 * expect(await conn.send(['GET', 'k'])).toBe('v');
 * conn.close();
 */
import { connect, type Socket } from 'node:net';

/** A reply: simple and bulk strings as strings, integers as numbers, nil as null, arrays, and an error reply as a RespError value. */
export type RespValue = string | number | null | RespError | RespValue[];

/** An error reply (`-ERR …`, `-NOAUTH …`): a value the caller inspects, not a thrown exception, since a test may expect one. */
export class RespError extends Error {
  override readonly name = 'RespError';
}

/** A command as RESP's array of bulk strings. */
export function encodeCommand(args: readonly (string | number | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg), 'utf8');
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** One reply read from `buf` at `offset`, and where the next begins; undefined while the reply is not all there yet. */
export function parseReply(buf: Buffer, offset = 0): { value: RespValue; next: number } | undefined {
  const lineEnd = buf.indexOf('\r\n', offset);
  if (lineEnd === -1) return undefined;
  const type = String.fromCharCode(buf[offset] as number);
  const line = buf.toString('utf8', offset + 1, lineEnd);
  const after = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, next: after };
    case '-':
      return { value: new RespError(line), next: after };
    case ':':
      return { value: Number(line), next: after };
    case '$': {
      const length = Number(line);
      if (length === -1) return { value: null, next: after };
      if (buf.length < after + length + 2) return undefined;
      return { value: buf.toString('utf8', after, after + length), next: after + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count === -1) return { value: null, next: after };
      const items: RespValue[] = [];
      let at = after;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, at);
        if (item === undefined) return undefined;
        items.push(item.value);
        at = item.next;
      }
      return { value: items, next: at };
    }
    default:
      throw new Error(`not a RESP reply: type byte ${JSON.stringify(type)} at ${offset}`);
  }
}

export interface RespConnection {
  /** Sends one command; resolves with its reply (replies arrive in the order sent). Rejects when the connection closes first. */
  send(args: readonly (string | number | Buffer)[]): Promise<RespValue>;
  /** Resolves when the connection has closed, from either side (a killed server, `CLIENT KILL`, a proxy's drop). */
  readonly closed: Promise<void>;
  readonly socket: Socket;
  close(): void;
}

/** A connection to a Redis at `port` on 127.0.0.1 (or `host`), open once it resolves. */
export function respConnect(port: number, options: { host?: string; timeoutMs?: number } = {}): Promise<RespConnection> {
  const socket = connect({ port, host: options.host ?? '127.0.0.1', noDelay: true });
  const pending: Array<{ resolve(value: RespValue): void; reject(error: Error): void }> = [];
  let buffered: Buffer = Buffer.alloc(0);
  let gone: Error | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    let at = 0;
    for (;;) {
      const reply = parseReply(buffered, at);
      if (reply === undefined) break;
      at = reply.next;
      pending.shift()?.resolve(reply.value);
    }
    buffered = buffered.subarray(at);
  });
  const closed = new Promise<void>((resolve) =>
    socket.on('close', () => {
      gone ??= new Error(`the connection to 127.0.0.1:${port} closed`);
      for (const p of pending.splice(0)) p.reject(gone);
      resolve();
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no connection to 127.0.0.1:${port} within ${options.timeoutMs ?? 5000} ms`));
    }, options.timeoutMs ?? 5000);
    socket.once('error', (error) => {
      gone = error;
      clearTimeout(timer);
      reject(error);
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      // After the connect, an error is the close's cause; `closed` and the pending sends report it.
      socket.on('error', (error) => (gone = error));
      resolve({
        socket,
        closed,
        send: (args) =>
          new Promise<RespValue>((res, rej) => {
            if (gone !== undefined || socket.destroyed) return rej(gone ?? new Error('the connection is closed'));
            pending.push({ resolve: res, reject: rej });
            socket.write(encodeCommand(args));
          }),
        close: () => void socket.destroy(),
      });
    });
  });
}

/** One command on a connection of its own, closed after the reply. */
export async function respCommand(port: number, args: readonly (string | number | Buffer)[], options: { host?: string; timeoutMs?: number } = {}): Promise<RespValue> {
  const conn = await respConnect(port, options);
  try {
    return await conn.send(args);
  } finally {
    conn.close();
  }
}

export interface RespMonitor {
  /** Commands clients sent since the monitor started, by name (upper case); a script's own calls are not among them. */
  commands(): ReadonlyMap<string, number>;
  /** All of them. */
  total(): number;
  close(): void;
}

/**
 * Redis' MONITOR on a connection of its own: what other clients send, counted as Redis executes it.
 * Redis shows the calls a script makes as `[<db> lua]`, the clients' own as `[<db> <address>]`: only
 * those are counted, so a script is one command however much it does inside.
 */
export async function respMonitor(port: number): Promise<RespMonitor> {
  const conn = await respConnect(port);
  const counts = new Map<string, number>();
  let text = '';
  // MONITOR's first reply is +OK; then a status line for each command, outside the request/reply order.
  await conn.send(['MONITOR']);
  conn.socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    const lines = text.split('\r\n');
    text = lines.pop() as string;
    for (const line of lines) {
      const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"/.exec(line);
      if (m === null || m[1] === 'lua') continue;
      const name = (m[2] as string).toUpperCase();
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
  });
  return {
    commands: () => counts,
    total: () => [...counts.values()].reduce((n, c) => n + c, 0),
    close: () => conn.close(),
  };
}
