/** Counting over windows, by hand and against a count of every window by brute force. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { busiestWindow, inWindow, type Counted } from './window-counts.js';

const at = (...pairs: Array<[number, number]>): Counted[] => pairs.map(([t, tokens]) => ({ at: t, tokens }));

describe('window counts', () => {
  it('inWindow counts the calls that arrived in [from, to), and their tokens', () => {
    const calls = at([0, 5], [999, 5], [1000, 7], [1500, 1]);
    expect(inWindow(calls, 0, 1000)).toEqual({ calls: 2, tokens: 10 });
    expect(inWindow(calls, 1000, 2000)).toEqual({ calls: 2, tokens: 8 });
    expect(inWindow(calls, 2000, 3000)).toEqual({ calls: 0, tokens: 0 });
  });

  it('busiestWindow finds the most calls and the most tokens in any window, each where it starts', () => {
    // Three quick calls late, one heavy call early: the busiest by calls is not the busiest by tokens.
    const calls = at([5000, 2], [0, 100], [5100, 2], [5200, 2], [900, 1]);
    expect(busiestWindow(calls, 1000)).toEqual({ calls: 3, tokens: 101, callsFrom: 5000, tokensFrom: 0 });
    // A window is half-open: a call exactly windowMs after the first is in the next one.
    expect(busiestWindow(at([0, 1], [1000, 1]), 1000).calls).toBe(1);
    expect(busiestWindow([], 1000)).toEqual({ calls: 0, tokens: 0, callsFrom: null, tokensFrom: null });
    expect(() => busiestWindow(calls, 0)).toThrow(/windowMs must be more than 0/);
  });

  it('busiestWindow agrees with a brute-force count of every window that starts at a call', () => {
    const record = fc.record({ at: fc.integer({ min: 0, max: 10_000 }), tokens: fc.integer({ min: 0, max: 1000 }) });
    fc.assert(
      fc.property(fc.array(record, { maxLength: 60 }), fc.integer({ min: 1, max: 5000 }), (calls, windowMs) => {
        const got = busiestWindow(calls, windowMs);
        let calls_ = 0;
        let tokens = 0;
        for (const c of calls) {
          const w = inWindow(calls, c.at, c.at + windowMs);
          calls_ = Math.max(calls_, w.calls);
          tokens = Math.max(tokens, w.tokens);
        }
        expect({ calls: got.calls, tokens: got.tokens }).toEqual({ calls: calls_, tokens });
        if (got.callsFrom !== null) expect(inWindow(calls, got.callsFrom, got.callsFrom + windowMs).calls).toBe(got.calls);
        if (got.tokensFrom !== null) expect(inWindow(calls, got.tokensFrom, got.tokensFrom + windowMs).tokens).toBe(got.tokens);
      }),
    );
  });
});
