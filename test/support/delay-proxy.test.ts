/**
 * The delay proxy in front of a real redis-server: a delay holds each chunk that long each way, in
 * order; a pause holds everything until resume; a drop closes live connections; a refusal refuses
 * new ones and leaves the live ones be.
 */
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDelayProxy, type DelayProxy } from './delay-proxy.js';
import { startRedis, type RedisServer } from './redis-server.js';
import { respConnect, type RespConnection } from './resp.js';
import { EARLY_MS, MARGIN_MS, until } from './waits.js';

function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** A promise's state, read without waiting on it. */
function watch<T>(promise: Promise<T>): { settled(): boolean; promise: Promise<T> } {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  return { settled: () => done, promise };
}

describe('delay proxy in front of redis-server', () => {
  let redis: RedisServer;
  let proxy: DelayProxy;
  const opened: RespConnection[] = [];
  const through = async () => {
    const conn = await respConnect(proxy.port);
    opened.push(conn);
    return conn;
  };
  beforeAll(async () => {
    redis = await startRedis();
    proxy = await startDelayProxy(redis.port);
  });
  afterEach(async () => {
    for (const c of opened.splice(0)) c.close();
    proxy.setDelay(0);
    proxy.resume();
    await proxy.refuse(false);
    await until(() => proxy.connections() === 0, 'the proxy has no connection left');
  });
  afterAll(async () => {
    await proxy.close();
    await redis.stop();
  });

  it('passes RESP through both ways; its url names its own port', async () => {
    expect(proxy.url('redis')).toBe(`redis://127.0.0.1:${proxy.port}`);
    expect(proxy.url('redis', ':pw')).toBe(`redis://:pw@127.0.0.1:${proxy.port}`);
    const conn = await through();
    expect(await conn.send(['SET', 'via', 'proxy'])).toBe('OK');
    expect(await redis.command('GET', 'via')).toBe('proxy');
    expect(proxy.connections()).toBe(1);
  });

  it('a delay of D holds a PING round trip at least 2 × D (the command and the reply each), not much more', async () => {
    const conn = await through();
    expect(await conn.send(['PING'])).toBe('PONG');
    const delay = 60;
    proxy.setDelay(delay);
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      expect(await conn.send(['PING'])).toBe('PONG');
      const took = performance.now() - t0;
      expect(took).toBeGreaterThanOrEqual(2 * delay - EARLY_MS);
      expect(took).toBeLessThan(2 * delay + MARGIN_MS);
    }
    proxy.setDelay(0);
    const t0 = performance.now();
    await conn.send(['PING']);
    expect(performance.now() - t0).toBeLessThan(delay);
  });

  it('keeps the order of chunks when the delay shrinks while some are held', async () => {
    const conn = await through();
    await conn.send(['DEL', 'order']);
    proxy.setDelay(150);
    const replies: Array<Promise<unknown>> = [];
    for (let i = 0; i < 20; i++) {
      replies.push(conn.send(['RPUSH', 'order', i]));
      // Each command on its own chunk: the delayed ones are held while the later ones come with none.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await until(() => proxy.held() > 0, 'chunks held by the delay');
    proxy.setDelay(0);
    for (let i = 20; i < 40; i++) replies.push(conn.send(['RPUSH', 'order', i]));
    await Promise.all(replies);
    // Redis appends in the order the commands reached it.
    expect(await redis.command('LRANGE', 'order', 0, -1)).toEqual(Array.from({ length: 40 }, (_, i) => String(i)));
  });

  it('pause holds a command until resume: it has not reached Redis, and its answer comes after', async () => {
    const conn = await through();
    await conn.send(['DEL', 'paused']);
    proxy.pause();
    const set = watch(conn.send(['SET', 'paused', 'yes']));
    await until(() => proxy.held() === 1, 'the SET held by the proxy');
    // Asked behind the proxy's back, over a round trip of its own: the SET has not arrived.
    expect(await redis.command('GET', 'paused')).toBeNull();
    expect(set.settled()).toBe(false);
    expect(proxy.connections()).toBe(1);
    proxy.resume();
    expect(await set.promise).toBe('OK');
    expect(await redis.command('GET', 'paused')).toBe('yes');
  });

  it('pause holds an answer Redis has sent until resume (the connection stays open)', async () => {
    const conn = await through();
    await conn.send(['DEL', 'queue']);
    const pop = watch(conn.send(['BLPOP', 'queue', 0]));
    // The BLPOP is blocked in Redis once Redis lists the client as blocked.
    await until(async () => /blocked_clients:1/.test(String(await redis.command('INFO', 'clients'))), 'the BLPOP blocked in Redis');
    proxy.pause();
    expect(await redis.command('LPUSH', 'queue', 'item')).toBe(1);
    await until(() => proxy.held() === 1, "Redis' answer held by the proxy");
    expect(pop.settled()).toBe(false);
    proxy.resume();
    expect(await pop.promise).toEqual(['queue', 'item']);
  });

  it('a connection made while paused is held too, and served on resume', async () => {
    proxy.pause();
    const conn = await through();
    const ping = watch(conn.send(['PING']));
    await until(() => proxy.held() === 1, 'the PING held');
    expect(ping.settled()).toBe(false);
    proxy.resume();
    expect(await ping.promise).toBe('PONG');
  });

  it('dropAll closes every live connection (FIN or RST); a new one works', async () => {
    const a = await through();
    const b = await through();
    await Promise.all([a.send(['PING']), b.send(['PING'])]);
    expect(proxy.connections()).toBe(2);
    proxy.dropAll();
    await Promise.all([a.closed, b.closed]);
    const c = await through();
    expect(await c.send(['PING'])).toBe('PONG');
    const errors: string[] = [];
    c.socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? ''));
    proxy.dropAll({ reset: true });
    await c.closed;
    expect(errors).toEqual(['ECONNRESET']);
    // The target sides are gone too: Redis counts only the connection that asks.
    await until(async () => /connected_clients:1\r/.test(String(await redis.command('INFO', 'clients'))), "Redis' side of the dropped connections closed");
  });

  it('refuse(true): a new connection is refused, a live one goes on; refuse(false) takes them again on the same port', async () => {
    const live = await through();
    await proxy.refuse(true);
    expect(await tryConnect(proxy.port)).toBe('ECONNREFUSED');
    expect(await live.send(['PING'])).toBe('PONG');
    await proxy.refuse(false);
    const again = await through();
    expect(await again.send(['PING'])).toBe('PONG');
  });

  it('a target that is down: the connection is accepted, then closed at once', async () => {
    const other = await startRedis();
    const front = await startDelayProxy(other.port);
    try {
      await other.kill();
      const conn = await respConnect(front.port);
      await conn.closed;
      expect(front.connections()).toBe(0);
    } finally {
      await front.close();
    }
  });
});
