// Preloaded into a gateway process by test/module-graph.test.ts (NODE_OPTIONS=--import=<this file>):
// when the process exits it says how many OpenTelemetry modules it loaded. The SDK, its exporters and
// the API are CommonJS, so each one loaded, by require() or by import(), is in the CommonJS cache.
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const cache = createRequire(import.meta.url).cache;
if (isMainThread) {
  process.on('exit', () => {
    const loaded = Object.keys(cache).filter((path) => path.includes('/@opentelemetry/'));
    process.stderr.write(`opentelemetry modules loaded: ${loaded.length}\n`);
  });
}
