/**
 * Waiting in tests (issue 34, point 4): a test waits on the event itself (`until` a condition
 * holds, a socket's `close`, a fake's `waitFor`), never a fixed sleep before an assertion, and
 * it bounds a timed thing by its configured value plus MARGIN_MS, not by "well under 3 s".
 * `sleep` stays for what is the point itself (pacing a slow client, a sampling interval, waiting
 * out a period to show that nothing happens), and its caller says why.
 */

/**
 * What a timed thing may take past its configured value in a test: a timer's turn, a thread hop,
 * a loopback round trip, on a loaded 2-core CI host running the suite's files side by side.
 */
export const MARGIN_MS = 500;

/** A timer fires on its millisecond, or one before it (Node rounds a timer's start down): a lower bound leaves this much. */
export const EARLY_MS = 2;

/** What `until` resolves with: the probe's value, not a falsy one. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` every `everyMs` until it gives a truthy value, which it resolves with; rejects
 * after `timeoutMs`, naming `what`. The probe may be async (a fetch), and may assert.
 *
 * @example
 * await until(() => pool.stats().inFlight === 0, 'nothing in flight', 1000);
 * const line = await until(() => gw.logs().find((l) => l.event === 'drain_started'), 'the drain_started line');
 */
export async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 3000, everyMs = 5): Promise<Truthy<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as Truthy<T>;
    if (performance.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await sleep(everyMs);
  }
}

