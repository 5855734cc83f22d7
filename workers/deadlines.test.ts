import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GatewayError } from '../protocol/errors.js';
import { Deadlines } from './deadlines.js';

const timeouts = { connectMs: 1000, headersMs: 300, idleMs: 100, totalMs: 1000 };

describe('Deadlines', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));
  afterEach(() => vi.useRealTimers());

  /** A call's deadlines and the codes they ended it with. */
  function start() {
    const expired: string[] = [];
    const deadlines = new Deadlines((reason: GatewayError) => expired.push(reason.code), timeouts);
    return { deadlines, expired };
  }

  /** Nothing has expired 1 ms before `ms` from now; 1 ms after, `code` has, alone. */
  function expectExpiryIn(expired: string[], ms: number, code: string): void {
    vi.advanceTimersByTime(ms - 1);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(2);
    expect(expired).toEqual([code]);
  }

  /** A chunk every `ms`, `count` times. */
  function chunksEvery(deadlines: Deadlines, ms: number, count: number): void {
    for (let i = 0; i < count; i++) {
      vi.advanceTimersByTime(ms);
      deadlines.chunkArrived();
    }
  }

  it('ends a call that gets no headers in time', () => {
    const { expired } = start();
    expectExpiryIn(expired, 300, 'upstream_headers_timeout');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('after the headers, ends a call whose body goes silent for the idle limit; each chunk moves the limit', () => {
    const { deadlines, expired } = start();
    vi.advanceTimersByTime(250);
    deadlines.headersArrived();
    chunksEvery(deadlines, 80, 5);
    expectExpiryIn(expired, 100, 'upstream_idle_timeout');
  });

  it('ends the call at the total limit however often chunks arrive', () => {
    const { deadlines, expired } = start();
    deadlines.headersArrived();
    chunksEvery(deadlines, 50, 19); // to 950 ms, never idle for long
    expectExpiryIn(expired, 50, 'upstream_timeout');
  });

  it('holds the idle limit while the client is paused and restarts it on release', () => {
    const { deadlines, expired } = start();
    deadlines.headersArrived();
    deadlines.hold();
    vi.advanceTimersByTime(500);
    deadlines.chunkArrived(); // a chunk already on its way when reading paused
    vi.advanceTimersByTime(300);
    expect(expired).toEqual([]);
    deadlines.release(); // at 800: the idle limit ends at 900, before the total's 1000
    expectExpiryIn(expired, 100, 'upstream_idle_timeout');
  });
});
