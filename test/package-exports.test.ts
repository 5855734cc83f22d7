/**
 * The package's public surface as an integrator meets it (issue 21, point 9): a project with
 * Switchyard in its node_modules imports `switchyard` and `switchyard/health` by name, in plain
 * JavaScript and in TypeScript with NodeNext resolution, and reaches nothing else.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repo = resolve(import.meta.dirname, '..');
let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'switchyard-consumer-'));
  mkdirSync(join(project, 'node_modules'));
  // As `npm install <path>` lays it out: the package under its own name.
  symlinkSync(repo, join(project, 'node_modules', 'switchyard'), 'dir');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
});

afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('package exports', () => {
  it('JavaScript: the root and the health toolkit import by name and work', async () => {
    writeFileSync(join(project, 'consumer.mjs'), `
      import { HealthRegistry, Health } from 'switchyard/health';
      import { alwaysHealthy, optionalCheck } from 'switchyard/health/testing';
      import * as root from 'switchyard';
      import * as health from 'switchyard/health';
      const registry = new HealthRegistry()
        .register({ name: 'database', check: async () => Health.degraded('replica lag') })
        .register(alwaysHealthy('cache'))
        .register(optionalCheck('warmup'));
      const readiness = await registry.checkReadiness();
      const liveness = await registry.checkLiveness();
      let deep = 'reachable';
      try { await import('switchyard/dist/src/config/load.js'); } catch (err) { deep = err.code; }
      console.log(JSON.stringify({
        readiness: readiness.status, readinessChecks: readiness.checks.length, livenessChecks: liveness.checks.length,
        root: ['startGateway', 'loadConfig', 'ERRORS', 'HealthRegistry'].filter((name) => typeof root[name] !== 'undefined'),
        testChecksInToolkit: 'alwaysHealthy' in health || 'alwaysHealthy' in root,
        deep,
      }));
    `);
    const { stdout } = await run(process.execPath, ['consumer.mjs'], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({
      readiness: 'degraded', readinessChecks: 2, livenessChecks: 3,
      root: ['startGateway', 'loadConfig', 'ERRORS', 'HealthRegistry'],
      testChecksInToolkit: false,
      deep: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    });
  });

  it('TypeScript: the declared types resolve under NodeNext and catch a misuse', async () => {
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [] },
      files: ['good.ts', 'bad.ts'],
    }));
    writeFileSync(join(project, 'good.ts'), `
      import { HealthRegistry, Health, type HealthReport } from 'switchyard/health';
      import { alwaysDegraded } from 'switchyard/health/testing';
      import { ERRORS, type ErrorCode } from 'switchyard';
      const registry = new HealthRegistry().register(alwaysDegraded('queue'));
      export const report: Promise<HealthReport> = registry.checkReadiness();
      export const unhealthy = Health.unhealthy('down');
      export const code: ErrorCode = 'model_not_found';
      export const status: number = ERRORS[code].status;
    `);
    writeFileSync(join(project, 'bad.ts'), `
      import { Health } from 'switchyard/health';
      export const wrong: number = Health.healthy();
    `);
    const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
    const outcome = await run(process.execPath, [tsc, '-p', project], { cwd: project }).then(() => '', (err) => String(err.stdout));
    // The one error is the deliberate misuse in bad.ts: good.ts type-checks against the shipped declarations.
    expect(outcome.split('\n').filter((line) => line.includes('error TS'))).toEqual([expect.stringMatching(/^bad\.ts\(3,20\): error TS2322: Type '.*' is not assignable to type 'number'\.$/)]);
  });
});
