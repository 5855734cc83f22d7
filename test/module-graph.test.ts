// What each thread loads at start, read off the compiled modules' static imports (dynamic
// `import()` is what loads a module later, on demand). A package in the wrong thread's start
// graph costs that thread its RSS and start time: undici ~20 MB, zod ~11 MB per isolate.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const STATIC_IMPORT = /^\s*(?:import|export)\s+(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

/** The packages a module and its static relative imports load, by package name. */
function packagesLoadedAtStart(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
      else if (!specifier.startsWith('node:')) packages.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] as string));
    }
  };
  visit(join(root, entry));
  return packages;
}

describe('what each thread loads at start (dist/, built by npm test)', () => {
  it('a provider worker loads msgpackr but not zod: the schemas are imported only for a body the hand checks do not pass', () => {
    const worker = packagesLoadedAtStart('dist/workers/entry.js');
    expect(worker).toContain('msgpackr');
    expect(worker).not.toContain('zod');
  });

  it("a provider worker loads undici's Pool and what it needs, not undici's index (fetch, WebSocket, caches: 3× the load time)", () => {
    // Run in a fresh process: undici is CommonJS, so what is loaded is in require's cache.
    const session = pathToFileURL(join(root, 'dist/workers/session.js')).href;
    const script = `await import(${JSON.stringify(session)});
      const { createRequire } = await import('node:module');
      const undici = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/node_modules/undici/'));
      process.stdout.write(JSON.stringify(undici.map((f) => f.slice(f.indexOf('/node_modules/undici/') + 21))));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' })) as string[];
    expect(loaded).toContain('lib/dispatcher/pool.js');
    expect(loaded).not.toContain('index.js');
    expect(loaded).not.toContain('lib/web/fetch/index.js');
  });

  it('the front loads uWS, zod (config, manifest) and prom-client but not undici: the worker session is imported only in inline mode', () => {
    const front = packagesLoadedAtStart('dist/src/main.js');
    expect(front).toContain('uWebSockets.js');
    expect(front).toContain('zod');
    expect(front).toContain('prom-client');
    expect(front).not.toContain('undici');
  });

  it('npm start runs the front bundled in one file (dist/server.js) with the native addon, piscina and undici left to node_modules', () => {
    // esbuild heads each bundled file's code with a comment naming its path.
    const bundled = new Set<string>();
    for (const [, name] of readFileSync(join(root, 'dist/server.js'), 'utf8').matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) bundled.add(name as string);
    for (const name of ['zod', 'prom-client', 'pino', 'yaml', 'msgpackr']) expect(bundled).toContain(name);
    for (const name of ['uWebSockets.js', 'piscina', 'undici']) expect(bundled).not.toContain(name);
  });

  it('the bundle is ASCII only: one wider character would make V8 hold all of its source at two bytes each', () => {
    const wide = readFileSync(join(root, 'dist/server.js'), 'utf8').match(/[^\x00-\x7f]/gu) ?? [];
    expect(wide).toEqual([]);
  });
});
