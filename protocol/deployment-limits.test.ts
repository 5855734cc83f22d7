/**
 * The per-pod window (deployment-limits.ts): over ANY window of the limit's
 * length the calls and tokens admitted stay within rpm and tpm (what was
 * given back or settled lower counts as such), and Retry-After's wait is
 * right: a call refused at t fits at t + waitMs, not before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeploymentLimits, LOCAL, NO_BUCKET, SHARED, deploymentLimitsMemory, type LimitTicket } from './deployment-limits.js';

const WINDOW = 60_000;
const ticket = (): LimitTicket => ({ bucket: NO_BUCKET, tokens: 0, credit: false });

const step = fc.oneof(
  fc.record({ kind: fc.constant('take' as const), tokens: fc.integer({ min: 1, max: 40 }), advance: fc.integer({ min: 0, max: 5000 }) }),
  fc.record({ kind: fc.constant('settle' as const), fraction: fc.double({ min: 0, max: 1, noNaN: true }), advance: fc.integer({ min: 0, max: 5000 }) }),
  fc.record({ kind: fc.constant('unsent' as const), advance: fc.integer({ min: 0, max: 5000 }) }),
);

describe('deployment limits, per pod (property)', () => {
  it('over any window: admitted calls ≤ rpm and tokens ≤ tpm (a call larger than tpm only into a window with no tokens)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 20, max: 400 }), fc.array(step, { minLength: 1, maxLength: 300 }), (rpm, tpm, steps) => {
        const limits = new DeploymentLimits(deploymentLimitsMemory(2));
        let now = 1_700_000_000_000;
        /** What reached the provider: when, and the tokens it counts for. */
        const admitted: Array<{ at: number; tokens: number; ticket: LimitTicket; open: boolean }> = [];
        for (const s of steps) {
          now += s.advance;
          if (s.kind === 'take') {
            const t = ticket();
            if (limits.take(1, { rpm, tpm }, s.tokens, now, WINDOW, t)) admitted.push({ at: now, tokens: s.tokens, ticket: t, open: true });
            else expect(limits.waitMs(1, { rpm, tpm }, s.tokens, now, WINDOW)).toBeGreaterThan(0);
          } else {
            const call = admitted.findLast((a) => a.open);
            if (call === undefined) continue;
            call.open = false;
            if (s.kind === 'settle') {
              const used = Math.floor(call.tokens * s.fraction);
              limits.settle(1, call.ticket, used, now, WINDOW);
              call.tokens = used;
            } else {
              limits.giveBack(1, call.ticket, now, WINDOW);
              admitted.splice(admitted.indexOf(call), 1);
            }
          }
        }
        for (const end of admitted) {
          const inWindow = admitted.filter((a) => a.at <= end.at && a.at > end.at - WINDOW);
          expect(inWindow.length).toBeLessThanOrEqual(rpm);
          const tokens = inWindow.reduce((n, a) => n + a.tokens, 0);
          // Over tpm only by one call larger than tpm, let into a window that held no tokens.
          if (tokens > tpm) expect(inWindow.filter((a) => a.tokens > 0)).toHaveLength(1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('Retry-After: a call refused at t is refused just before t + waitMs and admitted at it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(fc.integer({ min: 0, max: 4000 }), { minLength: 1, maxLength: 80 }), (rpm, gaps) => {
        const limits = new DeploymentLimits(deploymentLimitsMemory(1));
        let now = 1_700_000_000_000;
        for (const gap of gaps) {
          now += gap;
          if (limits.take(0, { rpm, tpm: 0 }, 1, now, WINDOW, ticket())) continue;
          const wait = limits.waitMs(0, { rpm, tpm: 0 }, 1, now, WINDOW);
          expect(wait).toBeGreaterThan(0);
          expect(limits.waitMs(0, { rpm, tpm: 0 }, 1, now + wait - 1, WINDOW)).toBeGreaterThan(0);
          now += wait;
          expect(limits.take(0, { rpm, tpm: 0 }, 1, now, WINDOW, ticket())).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('deployment limits, shared mode', () => {
  it('takes from the credit; with none, goes on credit down to the overdraft unless the last draw said the fleet is spent', () => {
    const limits = new DeploymentLimits(deploymentLimitsMemory(1));
    const now = 1_700_000_000_000;
    limits.setMode(SHARED, 1);
    limits.credit(0, 2, 0, 0);
    limits.setOverdraft(0, 1, 0);
    const rpm = { rpm: 100, tpm: 0 };
    expect([1, 2, 3, 4].map(() => limits.take(0, rpm, 5, now, WINDOW, ticket()))).toEqual([true, true, true, false]);
    expect(limits.requestCredit(0)).toBe(-1);
    // A draw covers what is owed and says the fleet is spent: nothing more on credit.
    limits.credit(0, 1, 0, now + 5_000);
    expect(limits.take(0, rpm, 5, now, WINDOW, ticket())).toBe(false);
    expect(limits.waitMs(0, rpm, 5, now, WINDOW)).toBe(5_000);
    limits.setMode(LOCAL, 1);
    expect(limits.take(0, rpm, 5, now, WINDOW, ticket())).toBe(true);
  });

  it('what a call does not use waits, by the bucket it was admitted in, for the front to give back to Redis', () => {
    const limits = new DeploymentLimits(deploymentLimitsMemory(1));
    const now = 1_700_000_000_000;
    limits.setMode(SHARED, 1);
    limits.credit(0, 10, 1000, 0);
    const a = ticket();
    const b = ticket();
    expect(limits.take(0, { rpm: 100, tpm: 10_000 }, 300, now, WINDOW, a)).toBe(true);
    expect(limits.take(0, { rpm: 100, tpm: 10_000 }, 200, now + 1000, WINDOW, b)).toBe(true);
    limits.settle(0, a, 120, now + 2000, WINDOW);
    limits.giveBack(0, b, now + 2000, WINDOW);
    const given: number[][] = [];
    limits.drainRefunds(0, now + 2000, WINDOW, (bucket, requests, tokens) => given.push([bucket, requests, tokens]));
    const bucket = Math.floor(now / 1000);
    expect(given).toEqual([
      [bucket, 0, 180],
      [bucket + 1, 1, 200],
    ]);
    // Not put back in the credit: it goes to Redis, to the bucket that counted it.
    expect(limits.tokenCredit(0)).toBe(500);
    const again: number[][] = [];
    limits.drainRefunds(0, now + 2000, WINDOW, (...x) => again.push(x));
    expect(again).toEqual([]);
  });
});
