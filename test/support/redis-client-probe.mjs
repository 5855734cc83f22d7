// Preloaded into a gateway process by test/module-graph.test.ts (NODE_OPTIONS=--import=<this file>):
// when the process exits it says how many modules of the Redis client (@redis/client, CommonJS, so in
// the CommonJS cache whether require() or import() loaded it) it loaded: none without a redis_url.
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const cache = createRequire(import.meta.url).cache;
if (isMainThread) {
  process.on('exit', () => {
    const loaded = Object.keys(cache).filter((path) => path.includes('/@redis/'));
    process.stderr.write(`redis client modules loaded: ${loaded.length}\n`);
  });
}
