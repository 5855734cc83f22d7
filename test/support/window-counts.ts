/**
 * Calls and tokens over a time window, as a provider counts a quota: the quota tests (issue 37)
 * bound what reached a counting upstream over any window of the limit's length (`rpm × 1.05 +
 * pods` over any 60 s, or the test's shorter window), and check that demand above the limit
 * got at least 95 % of it over a window.
 *
 * Each call counts at its arrival (`at`, performance.now() of the test process, where the fake
 * upstreams run), with the tokens the upstream billed for it.
 *
 * @example
 * const calls = up.deployments.flatMap((d) => d.calls());             // or one deployment's
 * const worst = busiestWindow(calls, 2_000);
 * expect(worst.calls).toBeLessThanOrEqual(rpm * 1.05 + pods);
 * expect(worst.tokens).toBeLessThanOrEqual(tpm * 1.05 + pods * estimate);
 * const steady = inWindow(calls, loadStart + 2_000, loadStart + 4_000);  // a window under steady demand
 * expect(steady.calls).toBeGreaterThanOrEqual(0.95 * rpm);
 */

/** What a window counts of a call: when it arrived and what it was billed. */
export interface Counted {
  readonly at: number;
  readonly tokens: number;
}

export interface WindowCount {
  readonly calls: number;
  readonly tokens: number;
}

/** The calls that arrived in [from, to), and their tokens. */
export function inWindow(calls: readonly Counted[], from: number, to: number): WindowCount {
  let n = 0;
  let tokens = 0;
  for (const c of calls) {
    if (c.at >= from && c.at < to) {
      n++;
      tokens += c.tokens;
    }
  }
  return { calls: n, tokens };
}

/**
 * The most calls, and apart from them the most tokens, that arrived within any window `windowMs` long ([t, t +
 * windowMs)), with where each busiest window starts. A window holding the most starts at a call, so only those
 * starts are tried.
 */
export function busiestWindow(calls: readonly Counted[], windowMs: number): { calls: number; tokens: number; callsFrom: number | null; tokensFrom: number | null } {
  if (!(windowMs > 0)) throw new Error(`busiestWindow: windowMs must be more than 0, got ${windowMs}`);
  const sorted = [...calls].sort((a, b) => a.at - b.at);
  let best = { calls: 0, tokens: 0, callsFrom: null as number | null, tokensFrom: null as number | null };
  let end = 0;
  let tokens = 0;
  for (let start = 0; start < sorted.length; start++) {
    const from = (sorted[start] as Counted).at;
    while (end < sorted.length && (sorted[end] as Counted).at < from + windowMs) tokens += (sorted[end++] as Counted).tokens;
    const n = end - start;
    if (n > best.calls) best = { ...best, calls: n, callsFrom: from };
    if (tokens > best.tokens) best = { ...best, tokens, tokensFrom: from };
    tokens -= (sorted[start] as Counted).tokens;
  }
  return best;
}
