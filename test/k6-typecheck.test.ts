/**
 * The k6 scenarios in loadtest/k6/ run under k6, not here, and no k6 binary
 * is needed: this type-checks them against @types/k6 with the project's own
 * compiler (loadtest/k6/tsconfig.json: strict, noEmit), so a scenario that
 * would fail in k6 on a wrong option, a misspelt API or a bad import fails
 * `npm test` instead.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const PROJECT = 'loadtest/k6/tsconfig.json';

function tsc(...args: string[]) {
  const run = spawnSync(process.execPath, [TSC, '-p', PROJECT, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, output: `${run.stdout}${run.stderr}`, error: run.error };
}

describe('k6 scenarios (loadtest/k6)', () => {
  it('type-check against @types/k6 with no errors', () => {
    const run = tsc();
    expect(run.error).toBeUndefined();
    expect(run.output).toBe('');
    expect(run.status).toBe(0);
  }, 60_000);

  it('the check covers every scenario file and the k6 types', () => {
    const run = tsc('--listFilesOnly');
    expect(run.status).toBe(0);
    const listed = run.output.split(/\r?\n/).map((f) => f.replaceAll('\\', '/'));
    const scenarios = readdirSync(join(ROOT, 'loadtest/k6')).filter((f) => f.endsWith('.ts'));
    expect(scenarios).toEqual(expect.arrayContaining(['lib.ts', 'chat.ts', 'stream.ts', 'embeddings.ts', 'probes.ts', 'soak.ts']));
    for (const file of scenarios) expect(listed, file).toContain(join(ROOT, 'loadtest/k6', file).replaceAll('\\', '/'));
    expect(listed.some((f) => f.endsWith('node_modules/@types/k6/http/index.d.ts'))).toBe(true);
  }, 60_000);
});
