/**
 * The shared deployment state's rules, on one thread: reservations never
 * past a cap, one half-open trial, allowed_fails within the window, cooling
 * at once, the lone rule, a dead worker's places taken back, and a slot
 * cleared for a new id. (The cross-thread behaviour is test/routing-state.test.ts's.)
 */
import { describe, expect, it } from 'vitest';
import { COOLING, DeploymentStates, FAILURE_WINDOW_MS, HALF_OPEN, HEALTHY, REFUSED, RESERVED, TRIAL_RESERVED, deploymentStateMemory, type FailureRecord } from './deployment-state.js';

const T0 = 1_800_000_000_000;
const failure = (over: Partial<FailureRecord> = {}): FailureRecord => ({ code: 'upstream_error', status: 500, coolNow: false, cooldownMs: 1000, allowedFails: 3, lone: false, ...over });

function twoWorkers() {
  const memory = deploymentStateMemory(4, 2);
  return { a: new DeploymentStates(memory, 0), b: new DeploymentStates(memory, 1) };
}

describe('DeploymentStates', () => {
  it('in flight is one count for every thread, and a cap is never passed', () => {
    const { a, b } = twoWorkers();
    expect(a.reserve(0, T0, 2)).toBe(RESERVED);
    expect(b.reserve(0, T0, 2)).toBe(RESERVED);
    expect(a.reserve(0, T0, 2)).toBe(REFUSED);
    expect(b.usable(0, T0, 2)).toBe(false);
    expect(a.inFlight(0)).toBe(2);
    b.release(0, RESERVED);
    expect(a.usable(0, T0, 2)).toBe(true);
    expect(a.reserve(0, T0, 0)).toBe(RESERVED);
    expect(b.inFlight(0)).toBe(2);
  });

  it('releasing slot -1 (a route-rule target, reserved without a slot) changes nothing and does not throw', () => {
    const { a } = twoWorkers();
    expect(() => a.release(-1, RESERVED)).not.toThrow();
    expect(a.inFlight(0)).toBe(0);
  });

  it('allowed_fails failures within the window cool it; older ones start a new window', () => {
    const { a } = twoWorkers();
    expect(a.fail(0, RESERVED, failure(), T0)).toBe(false);
    expect(a.fail(0, RESERVED, failure(), T0 + 10)).toBe(false);
    // The window has passed: the count starts again.
    expect(a.fail(0, RESERVED, failure(), T0 + FAILURE_WINDOW_MS + 20)).toBe(false);
    expect(a.snapshot(0, T0 + FAILURE_WINDOW_MS + 20).failuresLastMinute).toBe(1);
    expect(a.fail(0, RESERVED, failure(), T0 + FAILURE_WINDOW_MS + 30)).toBe(false);
    expect(a.fail(0, RESERVED, failure(), T0 + FAILURE_WINDOW_MS + 40)).toBe(true);
    const now = T0 + FAILURE_WINDOW_MS + 41;
    expect(a.stateAt(0, now)).toBe(COOLING);
    expect(a.usable(0, now, 0)).toBe(false);
    expect(a.reserve(0, now, 0)).toBe(REFUSED);
    expect(a.cooldowns(0)).toBe(1);
    expect(a.snapshot(0, now)).toMatchObject({ state: 'cooling_down', cooldownRemainingMs: 999, lastError: { code: 'upstream_error', status: 500 } });
  });

  it('a 429 cools at once; a lone deployment is recorded but never cooled', () => {
    const { a } = twoWorkers();
    expect(a.fail(0, RESERVED, failure({ code: 'rate_limited', status: 429, coolNow: true }), T0)).toBe(true);
    expect(a.stateAt(0, T0)).toBe(COOLING);
    expect(a.fail(1, RESERVED, failure({ coolNow: true, lone: true }), T0)).toBe(false);
    expect(a.stateAt(1, T0)).toBe(HEALTHY);
    expect(a.snapshot(1, T0).lastError?.status).toBe(500);
  });

  it('half-open lets exactly one trial through, on any thread; its success heals, its failure cools again at once', () => {
    const { a, b } = twoWorkers();
    a.fail(0, RESERVED, failure({ coolNow: true }), T0);
    const later = T0 + 1000;
    expect(a.stateAt(0, later)).toBe(HALF_OPEN);
    expect(a.reserve(0, later, 0)).toBe(TRIAL_RESERVED);
    expect(b.usable(0, later, 0)).toBe(false);
    expect(b.reserve(0, later, 0)).toBe(REFUSED);
    a.fail(0, TRIAL_RESERVED, failure({ allowedFails: 100 }), later);
    a.release(0, TRIAL_RESERVED);
    expect(a.stateAt(0, later + 1)).toBe(COOLING);
    const again = later + 1000;
    expect(b.reserve(0, again, 0)).toBe(TRIAL_RESERVED);
    b.succeed(0, TRIAL_RESERVED, 12);
    b.release(0, TRIAL_RESERVED);
    expect(a.stateAt(0, again)).toBe(HEALTHY);
    expect(a.reserve(0, again, 0)).toBe(RESERVED);
    expect(a.snapshot(0, again)).toMatchObject({ state: 'healthy', failuresLastMinute: 0, latencyEwmaMs: 12 });
  });

  it('a trial whose client left frees the trial for the next call', () => {
    const { a, b } = twoWorkers();
    a.fail(0, RESERVED, failure({ coolNow: true }), T0);
    expect(a.reserve(0, T0 + 1000, 0)).toBe(TRIAL_RESERVED);
    a.release(0, TRIAL_RESERVED);
    expect(b.reserve(0, T0 + 1000, 0)).toBe(TRIAL_RESERVED);
  });

  it("a dead worker's places in flight and its trial are taken back; the other worker's stay", () => {
    const { a, b } = twoWorkers();
    a.reserve(0, T0, 0);
    a.reserve(0, T0, 0);
    b.reserve(0, T0, 0);
    b.fail(1, RESERVED, failure({ coolNow: true }), T0);
    expect(b.reserve(1, T0 + 1000, 0)).toBe(TRIAL_RESERVED);
    a.takeBack(1);
    expect(a.inFlight(0)).toBe(2);
    expect(a.inFlight(1)).toBe(0);
    expect(a.reserve(1, T0 + 1000, 0)).toBe(TRIAL_RESERVED);
  });

  it('the latency average starts at its first sample and moves by 0.3 of each next one', () => {
    const { a } = twoWorkers();
    expect(a.hasLatency(2)).toBe(false);
    a.succeed(2, RESERVED, 100);
    a.succeed(2, RESERVED, 200);
    expect(a.latency(2)).toBeCloseTo(130);
  });

  it('clear gives a slot to a new id with nothing of the old; forgive ends a cooldown', () => {
    const { a } = twoWorkers();
    a.fail(3, RESERVED, failure({ coolNow: true }), T0);
    a.succeed(3, RESERVED, 5);
    a.forgive(3);
    expect(a.stateAt(3, T0)).toBe(HEALTHY);
    a.backOff(3, T0 + 5000, 429);
    a.clear(3);
    expect(a.snapshot(3, T0)).toEqual({ state: 'healthy', cooldownRemainingMs: 0, inFlight: 0, latencyEwmaMs: null, failuresLastMinute: 0, lastError: null, cooldowns: 0, backoffRemainingMs: 0 });
    expect(a.usable(3, T0, 0)).toBe(true);
  });

  it("a provider's back-off keeps every thread off the deployment until it ends, lone or not, without cooling it; a later end wins", () => {
    const { a, b } = twoWorkers();
    a.backOff(1, T0 + 1000, 503);
    for (const s of [a, b]) {
      expect(s.usable(1, T0 + 999, 0)).toBe(false);
      expect(s.reserve(1, T0 + 999, 0)).toBe(REFUSED);
      expect(s.stateAt(1, T0 + 999)).toBe(HEALTHY);
    }
    expect(b.backoffStatus(1)).toBe(503);
    expect(b.snapshot(1, T0 + 400).backoffRemainingMs).toBe(600);
    // A shorter wait asked later does not shorten it; a longer one lengthens it.
    b.backOff(1, T0 + 500, 429);
    expect(a.backoffUntil(1)).toBe(T0 + 1000);
    expect(a.backoffStatus(1)).toBe(503);
    b.backOff(1, T0 + 2000, 429);
    expect(a.backoffUntil(1)).toBe(T0 + 2000);
    expect(a.backoffStatus(1)).toBe(429);
    expect(a.reserve(1, T0 + 2000, 0)).toBe(RESERVED);
    expect(b.usable(1, T0 + 2000, 0)).toBe(true);
    expect(a.inFlight(1)).toBe(1);
    // The slot next to it is untouched.
    expect(a.usable(2, T0, 0)).toBe(true);
  });

  it('a scrape replaces the figures on every thread; calls sent since it count until they end or the next scrape', () => {
    const { a, b } = twoWorkers();
    expect(a.scrapedAt(2)).toBe(0);
    b.scraped(2, 3, 4, 0.25, T0);
    expect([a.scrapedAt(2), a.waiting(2), a.running(2), a.kvCache(2), a.sentSinceScrape(2)]).toEqual([T0, 3, 4, 0.25, 0]);
    const first = a.sent(2);
    const second = b.sent(2);
    expect(a.sentSinceScrape(2)).toBe(2);
    a.sentDone(2, first);
    expect(b.sentSinceScrape(2)).toBe(1);
    // The next scrape holds the call still running in the server's own counts: it starts again from 0,
    // and the call's end no longer takes anything off.
    b.scraped(2, 0, 1, 0.3, T0 + 250);
    expect(a.sentSinceScrape(2)).toBe(0);
    b.sentDone(2, second);
    expect(a.sentSinceScrape(2)).toBe(0);
    // Its neighbours are untouched, and a slot handed to a new id starts unscraped.
    expect(a.scrapedAt(1)).toBe(0);
    expect(a.scrapedAt(3)).toBe(0);
    a.clear(2);
    expect([a.scrapedAt(2), a.waiting(2), a.running(2), a.kvCache(2), a.sentSinceScrape(2)]).toEqual([0, 0, 0, 0, 0]);
  });

  it('the inference fields live in the spare bytes: the other fields of the slot are unchanged by a scrape', () => {
    const { a } = twoWorkers();
    a.fail(1, RESERVED, failure({ coolNow: true }), T0);
    a.succeed(1, RESERVED, 7);
    a.backOff(1, T0 + 5000, 429);
    expect(a.reserve(1, T0 + 10_000, 0)).toBe(TRIAL_RESERVED);
    const before = a.snapshot(1, T0 + 10_000);
    a.scraped(1, 9, 9, 0.9, T0 + 10_000);
    a.sent(1);
    expect(a.snapshot(1, T0 + 10_000)).toEqual(before);
  });
});
