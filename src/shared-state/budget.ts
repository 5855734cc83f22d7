/**
 * A pod's share of one fleet-wide limit (calls or tokens of one deployment),
 * as the front keeps its books: pure, no I/O, no clock of its own, so a
 * property test can run any interleaving (src/shared-state/budget.test.ts).
 *
 * The fleet's budget is a sliding window in Redis (src/shared-state/scripts.ts:
 * B + 1 buckets, a draw is granted what the window has room for). The pod
 * draws a slice ahead of use into the workers' credit (protocol/deployment-limits.ts),
 * and the workers take from the credit with no round trip. The books here:
 *
 * - lots: what each draw granted (its Redis bucket, when, what is left),
 *   used first in, first out;
 * - owed: what the workers used on credit beyond every lot (at most one
 *   call's worth: the credit's rule), covered by the next grant;
 * - `expected`: the credit the shared memory shows when nothing was used
 *   since the last look, so the difference is what was used.
 *
 * A lot older than `ttl` gives back what is left of it to its own bucket,
 * so budget a pod holds and does not use goes back to the fleet.
 *
 * The bound (docs/OPERATIONS.md, "Sizing"): a pod never holds more than one
 * slice S (it draws up to S when below S / 2, one draw at a time) and never
 * owes more than its overdraft O (for tokens, O plus one call's estimate e),
 * so the calls over any window are at most what Redis granted in it (≤ L)
 * plus the slices in hand when it began plus what was used on credit:
 * L + pods × (S + O), and for tokens T + pods × (S + O + e). `shareOf`
 * sizes S and O so that this is within L × 1.05 + pods (T × 1.05 + pods × e).
 */

/** What a draw granted, and what of it is still in the pod's hand. */
export interface Lot {
  /** The Redis bucket it was counted in (the fleet's clock, Redis', / bucket width). */
  readonly bucket: number;
  /** When it was granted, by the fleet's clock. */
  readonly at: number;
  remaining: number;
}

export class Budget {
  readonly #lots: Lot[] = [];
  #expected = 0;
  #owed = 0;
  /** A draw is on its way: no second one is started. */
  drawing = false;

  /** The credit the shared memory should show (in hand, less what is owed). */
  get expected(): number {
    return this.#expected;
  }

  get owed(): number {
    return this.#owed;
  }

  /** What is in hand, over all lots. */
  get inHand(): number {
    let n = 0;
    for (const lot of this.#lots) n += lot.remaining;
    return n;
  }

  get lots(): readonly Lot[] {
    return this.#lots;
  }

  /** The workers' credit is `credit` now: what they used since the last look comes off the oldest lots, the rest is owed. */
  observe(credit: number): void {
    let used = this.#expected - credit;
    this.#expected = credit;
    // Credit only ever goes down between two looks (a call takes; what it did not use goes back to Redis, not here).
    while (used > 0 && this.#lots.length > 0) {
      const lot = this.#lots[0] as Lot;
      const take = Math.min(used, lot.remaining);
      lot.remaining -= take;
      used -= take;
      if (lot.remaining === 0) this.#lots.shift();
    }
    if (used > 0) this.#owed += used;
  }

  /** How much to draw now (0: enough in hand, or a draw on its way): up to one slice in hand, what is owed included. */
  want(slice: number): number {
    if (this.drawing) return 0;
    const credit = this.#expected;
    return credit * 2 < slice ? slice - credit : 0;
  }

  /** A draw granted `amount` in `bucket` (after the workers' credit was raised by it). What is owed is covered first. */
  granted(bucket: number, at: number, amount: number): void {
    this.#expected += amount;
    const cover = Math.min(this.#owed, amount);
    this.#owed -= cover;
    if (amount > cover) this.#lots.push({ bucket, at, remaining: amount - cover });
  }

  /** The lots older than `ttl` at `now` (oldest first): the caller takes back what it can from the credit, then calls `returned`. */
  expired(now: number, ttl: number): Lot[] {
    const out: Lot[] = [];
    for (const lot of this.#lots) {
      if (now - lot.at < ttl) break;
      out.push(lot);
    }
    return out;
  }

  /**
   * `lot` is closed: `reclaimed` of it was taken back from the workers' credit (and goes back to the
   * fleet); the rest of what it held was used meanwhile, which the next `observe` sees.
   */
  returned(lot: Lot, reclaimed: number): void {
    const at = this.#lots.indexOf(lot);
    if (at === -1) return;
    this.#lots.splice(at, 1);
    // The credit went down by `reclaimed` and by what was used of the lot since the last look; the lot leaves the books whole.
    this.#expected -= lot.remaining;
    void reclaimed;
  }

  /** Redis was lost or came back: the books start again (what the workers hold stays theirs until the mode changes). */
  reset(credit: number): void {
    this.#lots.length = 0;
    this.#owed = 0;
    this.#expected = credit;
    this.drawing = false;
  }
}

/**
 * How a pod holds its share of a limit: the slice it draws (it holds at most one), and the overdraft
 * (how far below 0 its credit may go while a draw is on its way). A pod's part of the 5 % is
 * P = ⌊0.05 × limit / pods⌋; half of it is the slice, the rest the overdraft, so
 * pods × (slice + overdraft) ≤ 0.05 × limit. A limit too small for that (P = 0: fewer than 20 calls
 * per pod and window) gets a slice of 1 and no overdraft, and its bound is limit + pods; P = 1 gets
 * a slice of 1 and an overdraft of 1: limit + 2 × pods ≤ 1.05 × limit + pods, since pods ≤ 0.05 × limit.
 */
export function shareOf(limit: number, pods: number): { slice: number; overdraft: number } {
  const part = Math.floor((0.05 * limit) / Math.max(1, pods));
  if (part === 0) return { slice: 1, overdraft: 0 };
  const slice = Math.max(1, Math.ceil(part / 2));
  return { slice, overdraft: Math.max(1, part - slice) };
}
