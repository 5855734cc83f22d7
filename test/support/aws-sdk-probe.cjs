// Preloaded into every thread of a gateway process by test/module-graph.test.ts
// (NODE_OPTIONS=--require=<this file>: Node runs --require preloads in worker threads too, --import
// ones only in the main thread), with AWS_SDK_PROBE_DIR=<a directory>: each thread writes there, as
// `front.json` or `worker-<threadId>.json`, the @aws-sdk packages it has loaded, at once and whenever
// they change. The packages are CommonJS, so each one loaded, by require() or import(), is in the
// thread's CommonJS cache.
'use strict';
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { isMainThread, threadId } = require('node:worker_threads');

const dir = process.env.AWS_SDK_PROBE_DIR;
if (dir) {
  const file = join(dir, isMainThread ? 'front.json' : `worker-${threadId}.json`);
  let written = null;
  const report = () => {
    const names = new Set();
    for (const path of Object.keys(require.cache)) {
      const name = /[/\\]node_modules[/\\](@aws-sdk[/\\][^/\\]+)[/\\]/.exec(path)?.[1];
      if (name) names.add(name.replace('\\', '/'));
    }
    const text = JSON.stringify([...names].sort());
    if (text !== written) writeFileSync(file, (written = text));
  };
  report();
  setInterval(report, 20).unref();
}
