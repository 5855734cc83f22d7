/**
 * The budget accounting (budget.ts) under any interleaving of draws (sent,
 * answered, lost), calls, calls that fail before they are sent, settlements
 * below the estimate, expiries and the clock: over every window the fleet
 * sends at most limit + pods × slice + pods × one call (the bound in
 * docs/OPERATIONS.md), and no budget is lost (what Redis counts is what
 * the pods used, once every pod has given back what it holds).
 *
 * Redis is modelled by the window its scripts keep (scripts.ts: B + 1
 * buckets, a draw granted what they have room for, a give-back taken off
 * the bucket it names); a pod's workers by their credit, with the rule of
 * protocol/deployment-limits.ts (take from the credit; with none, one call
 * on credit unless the last draw said the fleet is spent).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Budget, shareOf, type Lot } from './budget.js';

const B = 60;
const WIDTH = 10;
const WINDOW = B * WIDTH;

/** Redis' side: the counts per bucket, as the DRAW and GIVEBACK scripts keep them. */
class WindowModel {
  readonly buckets = new Map<number, number>();
  draw(bucket: number, want: number, limit: number): { granted: number; spent: boolean } {
    let sum = 0;
    for (let b = bucket - B; b <= bucket; b++) sum += this.buckets.get(b) ?? 0;
    const granted = Math.max(0, Math.min(want, limit - sum));
    this.buckets.set(bucket, (this.buckets.get(bucket) ?? 0) + granted);
    return { granted, spent: granted < want };
  }
  /** Not clamped at 0: a call's refund goes to its own bucket, which may be later than the draw that counted it. */
  giveBack(bucket: number, amount: number): void {
    this.buckets.set(bucket, (this.buckets.get(bucket) ?? 0) - amount);
  }
  total(): number {
    let n = 0;
    for (const v of this.buckets.values()) n += v;
    return n;
  }
}

interface Pod {
  readonly budget: Budget;
  credit: number;
  spent: boolean;
  /** A draw sent and not answered: its bucket is taken when Redis runs it. */
  pending: number | null;
  /** Calls admitted and not settled: their estimate, their bucket, what reached the provider. */
  open: Array<{ estimate: number; bucket: number; sent: { at: number; units: number } }>;
}

const event = fc.oneof(
  fc.record({ kind: fc.constant('call' as const), pod: fc.nat(), size: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('settle' as const), pod: fc.nat(), used: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('unsent' as const), pod: fc.nat() }),
  fc.record({ kind: fc.constant('tick' as const), pod: fc.nat() }),
  fc.record({ kind: fc.constant('answer' as const), pod: fc.nat(), lost: fc.boolean() }),
  fc.record({ kind: fc.constant('expire' as const), pod: fc.nat() }),
  fc.record({ kind: fc.constant('clock' as const), ms: fc.integer({ min: 0, max: 3 * WIDTH }) }),
);

describe('fleet budget accounting (property)', () => {
  it('over every window: sent ≤ limit + pods × (slice + overdraft + one call) ≤ limit × 1.05 + pods × (one call + 1); what Redis counts is what was used', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 400 }), fc.array(event, { minLength: 1, maxLength: 400 }), (podCount, limit, events) => {
        const redis = new WindowModel();
        const { slice, overdraft } = shareOf(limit, podCount);
        const ttl = 2 * WIDTH;
        const pods: Pod[] = Array.from({ length: podCount }, () => ({ budget: new Budget(), credit: 0, spent: false, pending: null, open: [] }));
        /** Units that reached the provider: when, how many. */
        const sent: Array<{ at: number; units: number }> = [];
        /** Units given back to Redis because they were not used (refunds and unsent calls), and units lost in draws whose answer never came. */
        let used = 0;
        let lostInDraws = 0;
        let now = 1_000_000;
        const bucket = () => Math.floor(now / WIDTH);

        for (const e of events) {
          if (e.kind === 'clock') {
            now += e.ms;
            continue;
          }
          const pod = pods[e.pod % podCount] as Pod;
          switch (e.kind) {
            case 'call': {
              // The workers' rule (deployment-limits.ts): take from the credit; with too little, on credit down to the
              // overdraft (a call larger than it only when nothing is owed) unless the fleet is spent.
              if (pod.credit >= e.size || (!pod.spent && overdraft > 0 && (pod.credit - e.size >= -overdraft || pod.credit >= 0))) {
                pod.credit -= e.size;
                const record = { at: now, units: e.size };
                pod.open.push({ estimate: e.size, bucket: bucket(), sent: record });
                sent.push(record);
                used += e.size;
              }
              break;
            }
            case 'settle': {
              // The provider used less than the estimate: the rest goes back to Redis, to the bucket the call was admitted in.
              const call = pod.open.shift();
              if (call === undefined) break;
              const actual = Math.floor(call.estimate * e.used);
              redis.giveBack(call.bucket, call.estimate - actual);
              used -= call.estimate - actual;
              call.sent.units = actual;
              break;
            }
            case 'unsent': {
              // Failed before it was sent: its reservation goes back to Redis whole, and it never reached the provider.
              const call = pod.open.pop();
              if (call === undefined) break;
              redis.giveBack(call.bucket, call.estimate);
              used -= call.estimate;
              sent.splice(sent.indexOf(call.sent), 1);
              break;
            }
            case 'tick': {
              pod.budget.observe(pod.credit);
              const want = pod.budget.want(slice);
              if (want > 0) {
                pod.budget.drawing = true;
                pod.pending = want;
              }
              break;
            }
            case 'answer': {
              if (pod.pending === null) break;
              const want = pod.pending;
              pod.pending = null;
              pod.budget.drawing = false;
              const { granted, spent } = redis.draw(bucket(), want, limit);
              if (e.lost) {
                // Redis ran the draw but its answer never came (a timeout): the grant is counted and never used.
                lostInDraws += granted;
                break;
              }
              pod.credit += granted;
              pod.spent = spent;
              pod.budget.granted(bucket(), now, granted);
              break;
            }
            case 'expire': {
              pod.budget.observe(pod.credit);
              for (const lot of pod.budget.expired(now, ttl) as Lot[]) {
                const reclaimed = Math.max(0, Math.min(lot.remaining, pod.credit));
                pod.credit -= reclaimed;
                redis.giveBack(lot.bucket, reclaimed);
                pod.budget.returned(lot, reclaimed);
              }
              break;
            }
          }
          // The books never disagree with the credit they follow.
          pod.budget.observe(pod.credit);
          expect(pod.budget.expected).toBe(pod.credit);
          expect(pod.budget.inHand - pod.budget.owed).toBe(pod.credit);
          // A pod never holds more than one slice: the bound's pods × slice.
          expect(pod.budget.inHand).toBeLessThanOrEqual(slice);
        }

        // The bound, over every window that starts at a call: within the contract's limit × 1.05 + pods × one call.
        const bound = limit + podCount * (slice + overdraft + 8);
        expect(bound).toBeLessThanOrEqual(limit * 1.05 + podCount * 8 + podCount);
        const sorted = [...sent].sort((a, b) => a.at - b.at);
        for (let i = 0; i < sorted.length; i++) {
          let units = 0;
          for (let j = i; j < sorted.length && (sorted[j] as { at: number }).at < (sorted[i] as { at: number }).at + WINDOW; j++) units += (sorted[j] as { units: number }).units;
          expect(units).toBeLessThanOrEqual(bound);
        }

        // Nothing lost: every pod gives back what it holds; what Redis counts is then what was used (less what is still
        // owed, covered by no draw yet), plus what draws whose answer was lost granted.
        let owed = 0;
        for (const pod of pods) {
          pod.budget.observe(pod.credit);
          for (const lot of pod.budget.expired(Infinity, 0)) {
            const reclaimed = Math.max(0, Math.min(lot.remaining, pod.credit));
            pod.credit -= reclaimed;
            redis.giveBack(lot.bucket, reclaimed);
            pod.budget.returned(lot, reclaimed);
          }
          owed += pod.budget.owed;
        }
        expect(redis.total()).toBe(used - owed + lostInDraws);
      }),
      { numRuns: 300 },
    );
  });
});
