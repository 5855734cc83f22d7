import { defineConfig } from 'vitest/config';

// `npm run test:stress`: only test/stress (long runs kept out of `npm test`).
// Files run one after another so one file's load does not skew another's
// latency, RSS or fd figures. CI (CI=true) also writes vitest's JSON report,
// which .ci/run adds to the main suite's "N passed, M failed".
const ci = process.env.CI === 'true';

export default defineConfig({
  test: {
    // redis-server and libfaketime for the Redis tests, installed where they are missing (test/support/ensure-test-packages.ts).
    globalSetup: ['test/support/ensure-test-packages.ts'],
    // ArrayBuffer.prototype.transfer in the test process's own isolate too (on Node 20 the gateway
    // turns it on only for the worker threads it starts): protocol/channel.ts's freeNow is tested here.
    execArgv: ['--harmony-rab-gsab-transfer'],
    include: ['test/stress/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 60_000,
    reporters: ci ? ['default', 'json'] : ['default'],
    outputFile: ci ? { json: '.vitest-stress-results.json' } : undefined,
  },
});
