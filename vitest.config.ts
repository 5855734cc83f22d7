import { defineConfig } from 'vitest/config';

// CI (CI=true) also writes vitest's JSON report, from which .ci/run prints "N passed, M failed".
const ci = process.env.CI === 'true';

export default defineConfig({
  test: {
    // redis-server and libfaketime for the Redis tests, installed where they are missing (test/support/ensure-test-packages.ts).
    globalSetup: ['test/support/ensure-test-packages.ts'],
    // ArrayBuffer.prototype.transfer in the test process's own isolate too (on Node 20 the gateway
    // turns it on only for the worker threads it starts): protocol/channel.ts's freeNow is tested here.
    execArgv: ['--harmony-rab-gsab-transfer'],
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'workers/**/*.test.ts', 'protocol/**/*.test.ts'],
    // vitest's default excludes, plus test/stress: that runs on its own (`npm run test:stress`, vitest.stress.config.ts).
    exclude: ['**/node_modules/**', '**/.git/**', 'test/stress/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    reporters: ci ? ['default', 'json'] : ['default'],
    outputFile: ci ? { json: '.vitest-results.json' } : undefined,
  },
});
