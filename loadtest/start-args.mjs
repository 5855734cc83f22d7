// The node arguments the gateway runs with, as npm start and the Dockerfile's CMD give them
// (test/container.test.ts keeps the three equal). The bench, ab.mjs and the profiler start it
// with these, so what they measure is what ships.
export const START_ARGS = ['--max-semi-space-size=4', '--v8-pool-size=1', '--no-allocation-site-pretenuring', 'dist/server.js'];

/** The flags alone, for a run that picks its own entry file. */
export const START_FLAGS = START_ARGS.slice(0, -1);
