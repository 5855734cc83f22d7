/**
 * A process whose wall clock is off the machine's, as a pod on a node whose clock drifts:
 * libfaketime (Debian's package) preloaded, the offset in FAKETIME. Only the wall clock moves
 * (Date.now, in every thread): the monotonic clock, which timers and performance.now run on, is
 * left alone (FAKETIME_DONT_FAKE_MONOTONIC), so the process keeps time as it should.
 *
 * @example
 * const fleet = await startFleet({ pods: 3, yaml, podEnv: (i) => (i === 2 ? skewedClockEnv(500) : {}) });
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The way to get libfaketime, for a test that cannot find it. */
export const FAKETIME_MISSING_HELP =
  'libfaketime is not installed (no /usr/lib/*/faketime/libfaketimeMT.so.1). Install it: `sudo apt-get install -y libfaketime`, or run `bash tools/ensure-test-packages.sh`, which `npm test` and `.ci/run` run first.';

/** The environment that sets a process' wall clock `offsetMs` off (ahead when positive). */
export function skewedClockEnv(offsetMs: number): Record<string, string> {
  const library = findLibrary();
  if (library === undefined) throw new Error(FAKETIME_MISSING_HELP);
  const seconds = offsetMs / 1000;
  return { LD_PRELOAD: library, FAKETIME: `${seconds >= 0 ? '+' : ''}${seconds}`, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

/** /usr/lib/<arch>/faketime/libfaketimeMT.so.1: the multithreaded build, as node's worker threads read the clock too. */
function findLibrary(): string | undefined {
  for (const dir of readdirSync('/usr/lib')) {
    const candidate = join('/usr/lib', dir, 'faketime', 'libfaketimeMT.so.1');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
