import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GatewayError } from '../src/errors.js';
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

  it('ends a call that gets no headers in time', () => {
    const { expired } = start();
    vi.advanceTimersByTime(299);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(2);
    expect(expired).toEqual(['upstream_headers_timeout']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('after the headers, ends a call whose body goes silent for the idle limit; each chunk moves the limit', () => {
    const { deadlines, expired } = start();
    vi.advanceTimersByTime(250);
    deadlines.headersArrived();
    for (let t = 0; t < 5; t++) {
      vi.advanceTimersByTime(80);
      deadlines.chunkArrived();
    }
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(99);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(2);
    expect(expired).toEqual(['upstream_idle_timeout']);
  });

  it('ends the call at the total limit however often chunks arrive', () => {
    const { deadlines, expired } = start();
    deadlines.headersArrived();
    for (let t = 50; t < 1000; t += 50) {
      vi.advanceTimersByTime(50);
      deadlines.chunkArrived();
    }
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(51);
    expect(expired).toEqual(['upstream_timeout']);
  });

  it('holds the idle limit while the client is paused and restarts it on release', () => {
    const { deadlines, expired } = start();
    deadlines.headersArrived();
    deadlines.hold();
    vi.advanceTimersByTime(500);
    deadlines.chunkArrived(); // a chunk already in flight when reading paused
    vi.advanceTimersByTime(300);
    expect(expired).toEqual([]);
    deadlines.release(); // at 800: idle limit at 900, before the total's 1000
    vi.advanceTimersByTime(99);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(2);
    expect(expired).toEqual(['upstream_idle_timeout']);
  });
});
