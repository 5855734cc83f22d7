// Bundles what each thread runs into as few files as it needs, after tsc has compiled to a build
// directory (tools/build.mjs calls bundle(dir); `dist` then points to that directory):
//   dist/server.js     the front (tsc's dist/src/main.js and everything it imports): what
//                      `npm start` and the image run;
//   dist/worker/       a provider worker (tsc's dist/workers/entry.js): entry.js, and the
//                      chunks it imports on demand (the zod schemas, for a body the hand checks
//                      do not pass); entry.cjs, what piscina loads (WORKER_LOADER, below).
// Node 20's module loaders resolve, read and link every file one by one: ~300 for zod,
// prom-client, pino and yaml in the front, ~60 for undici's Pool in a worker, ~15 for piscina.
// Bundled, the front starts in 570 ms instead of 800 (1 worker, one core, 16 runs alternated).
// Resolving those paths also made `path.normalize` hot enough for V8 to start its optimizing
// compiler during start-up, which pages in ~4 MB of the node binary and the compiler's own
// memory before the first request: with everything bundled, a gateway with one worker idles
// at 76.8 MB instead of 82.1 (3 fresh processes each, 1 s after ready).
// tsc's dist/ stays as it is: the library export (dist/src/index.js) is loaded from there.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // The bundled CommonJS packages call require(); an ES module has none of its own.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  sourcemap: 'linked',
  logLevel: 'warning',
  write: false,
};

// piscina starts its threads from worker.js next to its own module (`__dirname`), which a
// bundle does not have: it is the package's directory, found the way node would find it.
const piscinaHome = {
  name: 'piscina-home',
  setup(b) {
    b.onLoad({ filter: /[/\\]piscina[/\\]dist[/\\]index\.js$/ }, (args) => ({
      contents: `var __dirname = require('node:path').dirname(require.resolve('piscina'));\n${readFileSync(args.path, 'utf8')}`,
      loader: 'js',
    }));
  },
};

// prom-client requires @opentelemetry/api when its CPU metric module loads, for exemplars, which the
// gateway never turns on: made a require on first use, so a front with tracing off loads no
// OpenTelemetry module at all (test/module-graph.test.ts checks it in a running server).
const PROM_OTEL_REQUIRE = "const OtelApi = require('@opentelemetry/api');";
const promClientLazyOtel = {
  name: 'prom-client-lazy-otel',
  setup(b) {
    b.onLoad({ filter: /[/\\]prom-client[/\\]lib[/\\]metrics[/\\]processCpuTotal\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes(PROM_OTEL_REQUIRE)) throw new Error(`${args.path}: its @opentelemetry/api require changed; update tools/bundle.mjs`);
      const lazy = "let otelApi; const api = () => (otelApi ??= require('@opentelemetry/api')); const OtelApi = { get trace() { return api().trace; }, get context() { return api().context; } };";
      return { contents: source.replace(PROM_OTEL_REQUIRE, lazy), loader: 'js' };
    });
  },
};

/**
 * The file piscina is given: CommonJS, so piscina's first try, require(), loads it as such, and the
 * ES module entry.js is imported. Node 20.19+ would otherwise require() entry.js itself, as an ES
 * module loaded synchronously (require(esm)): that path aborted a whole test process once in CI
 * (Node 20.20.2, "FATAL ERROR: v8::Module::IsGraphAsync must be used on an instantiated module",
 * from piscina's require of entry.js). Turning require(esm) off in the workers instead
 * (--no-experimental-require-module) cost 1.8 MB of idle RSS: piscina's require then read and
 * compiled entry.js as CommonJS before it failed. This loader costs 0.9 MB more than require(esm)
 * (the ES module loader's own start), 3 fresh processes each. The import starts at once, beside the
 * thread's start; an error in it reaches the attach task that awaits it, so the log names it.
 */
const WORKER_LOADER = `'use strict';
// Written by tools/bundle.mjs: see WORKER_LOADER there.
const entry = import('./entry.js');
entry.catch(() => {}); // the attach task that awaits it reports the failure
module.exports = async function attach(task) {
  return (await entry).default(task);
};
`;

/** Bundles tsc's output in `dir` (a build directory) into `dir`/server.js and `dir`/worker/. */
export async function bundle(dir) {
  const front = await build({
    ...common,
    entryPoints: [join(dir, 'src/main.js')],
    outfile: join(dir, 'server.js'),
    // The native addon loads from node_modules at run time; so does OpenTelemetry, and only when tracing is
    // on (src/tracing/otel.ts imports it with import(), which stays an import() of the package here); so do
    // the AWS packages, which only an inline session's first bedrock call imports (workers/providers/bedrock/aws.ts
    // and chain.ts, import()): bundled, their 0.4 MB (and the credential chain's) would be read and parsed at every start;
    // and so does the o200k tokenizer, which only an inline session's first count_tokens imports
    // (workers/inbound/messages/count-tokens.ts): bundled, its 3.4 MB of ranks would be parsed at every start.
    external: ['uWebSockets.js', '@redis/*', '@opentelemetry/*', '@smithy/*', '@aws-sdk/*', 'gpt-tokenizer', 'gpt-tokenizer/*'],
    plugins: [piscinaHome, promClientLazyOtel],
  });

  rmSync(join(dir, 'worker'), { recursive: true, force: true });
  mkdirSync(join(dir, 'worker'));
  const worker = await build({
    ...common,
    entryPoints: [join(dir, 'workers/entry.js')],
    outdir: join(dir, 'worker'),
    // What a worker imports with import() stays out of entry.js, loaded when first needed.
    splitting: true,
    // The AWS credential chain (workers/providers/bedrock/chain.ts, import() on a bedrock deployment's first call
    // without keys) loads from node_modules. Bundled, it was a 0.4 MB chunk of every source the chain may use
    // (all of nested-clients' STS, SSO, OIDC and sign-in clients), parsed whole by a worker that needs one of
    // them; from node_modules, the SDK's own lazy require()s load only the sources a run reaches. And it shared
    // @smithy/core with the signer's chunk, which esbuild then cut into common chunks behind entry.js's import().
    external: ['@aws-sdk/*'],
  });

  for (const file of [...front.outputFiles, ...worker.outputFiles]) {
    // esbuild escapes every character beyond ASCII in code, not in the comments it keeps. One
    // such character ("—", "→") makes V8 hold the whole 1.6 MB source in two bytes per
    // character: escaped, the front holds 1.4 MB less (idle RSS, 3 runs). \uXXXX per UTF-16
    // unit is an escape that means the same in a string and in any regular expression.
    // eslint-disable-next-line no-control-regex -- ASCII is \x00 to \x7f, NUL included
    const text = file.path.endsWith('.js') ? file.text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : file.text;
    writeFileSync(file.path, text);
  }
  writeFileSync(join(dir, 'worker', 'entry.cjs'), WORKER_LOADER);
}
