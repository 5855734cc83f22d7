/**
 * vitest's global setup: redis-server on the machine before any test file runs, installed from
 * Debian's packages where it is missing (tools/ensure-redis-server.sh), so `npm ci && npm test`
 * passes on a fresh machine as the README says. Run once, before the workers start: the Redis
 * tests never install it themselves, and never skip without it.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const script = fileURLToPath(new URL('../../tools/ensure-redis-server.sh', import.meta.url));
  const r = spawnSync('bash', [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${script} failed (exit ${r.status}): the Redis tests need redis-server (apt-get install redis-server)`);
}
