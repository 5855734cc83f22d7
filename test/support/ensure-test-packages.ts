/**
 * vitest's global setup: redis-server and libfaketime on the machine before any test file runs,
 * installed from Debian's packages where they are missing (tools/ensure-test-packages.sh), so
 * `npm ci && npm test` passes on a fresh machine as the README says. Run once, before the workers
 * start: the tests never install them themselves, and never skip without them.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const script = fileURLToPath(new URL('../../tools/ensure-test-packages.sh', import.meta.url));
  const r = spawnSync('bash', [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${script} failed (exit ${r.status}): the tests need redis-server and libfaketime (apt-get install redis-server libfaketime)`);
}
