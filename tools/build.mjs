// `npm run build` (and npm start, npm test, the bench and the profiler before they run): builds
// dist/ only when the sources changed since the build it holds, and never in place.
//
// dist is a symlink to one complete build, dist-builds/<id>/ (tsc's output, the bundles, and
// .build.json naming the sources it was built from). A build is written to a fresh
// dist-builds/.tmp-<pid>-*/ directory, renamed to dist-builds/<id>/ when complete, and made
// current by renaming a new symlink over dist: a rename is atomic, so whoever opens
// dist/server.js or dist/worker/entry.js finds a whole build, the old or the new. A process
// keeps loading from the build it started on (node resolves the symlink to the build's own
// path; src/supervisor/worker-pool.ts pins the worker entry the same way), so the old build
// is kept while any process holds one of its files open (the worker pool keeps its entry open)
// and, for a process that has just started on it and holds nothing yet, while it is one of
// the two newest. Two builds at once each write their own directory; the last rename wins and
// both results are complete.
//
// Up to date means: the content hash of the sources (SOURCES below: every file tsc compiles or
// the bundler reads, and the build's own settings and tools) equals the one in
// dist/.build.json. A hash rather than mtimes: a deleted file changes it, and a file edited
// while a build ran leaves that build stale (the hash is taken before tsc reads anything).
//
// tsc stays incremental: a new build starts as a copy of the current one, .tsbuildinfo
// included (tsconfig.json's own outDir and tsBuildInfoFile, dist/, serve a direct `tsc`).
//
// Usage: node tools/build.mjs [--force]. Says on stderr what it did: "build: up to date (…)"
// or "build: rebuilding (…)" then "build: … ready in N s".
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LINK = join(ROOT, 'dist');
const BUILDS = join(ROOT, 'dist-builds');
const STAMP = '.build.json';
/** What a build is made from: tsconfig.json's include, the compiler's and bundler's inputs and settings. */
const SOURCES = ['src', 'workers', 'protocol', 'tsconfig.json', 'package.json', 'package-lock.json', 'tools/bundle.mjs', 'tools/build.mjs'];
/** Completed builds always kept, newest first (besides the current one and any held open). */
const KEEP_NEWEST = 2;

const say = (text) => process.stderr.write(`build: ${text}\n`);
const started = performance.now();

const sources = sourcesHash();
const current = readStamp();
const force = process.argv.includes('--force');
if (!force && current?.sources === sources) {
  say(`up to date (dist -> ${relative(ROOT, realpathSync(LINK))})`);
  process.exit(0);
}
say(`rebuilding (${force ? '--force' : current === null ? 'no complete build in dist/' : 'sources changed'})`);

mkdirSync(BUILDS, { recursive: true });
const work = mkdtempSync(join(BUILDS, `.tmp-${process.pid}-`));
chmodSync(work, 0o755); // mkdtemp's 0700 would keep the build from other users (the image's)
try {
  seed(work);
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const compiled = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.json'), '--outDir', work, '--tsBuildInfoFile', join(work, '.tsbuildinfo')], { stdio: 'inherit' });
  if (compiled.status !== 0) throw new Error(`tsc exited with ${compiled.status ?? compiled.signal}`);
  // Loaded only to build: an up-to-date start does not pay for loading esbuild.
  const { bundle } = await import('./bundle.mjs');
  await bundle(work);
  writeFileSync(join(work, STAMP), `${JSON.stringify({ sources })}\n`);
} catch (err) {
  rmSync(work, { recursive: true, force: true });
  say(`failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
const id = `${Date.now()}-${process.pid}`;
renameSync(work, join(BUILDS, id));
install(id);
say(`dist -> dist-builds/${id} ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
removeUnused();

/** sha256 over the path and content of every source file, in a fixed order. */
function sourcesHash() {
  const hash = createHash('sha256');
  const add = (rel) => {
    const path = join(ROOT, rel);
    if (!existsSync(path)) return;
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path).sort()) add(`${rel}/${name}`);
      return;
    }
    hash.update(`${rel}\0`).update(readFileSync(path)).update('\0');
  };
  for (const rel of SOURCES) add(rel);
  return hash.digest('hex');
}

/** The current build's stamp; null when dist/ is missing or was not made by this tool. */
function readStamp() {
  try {
    return JSON.parse(readFileSync(join(LINK, STAMP), 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Starts `work` as a copy of the current build, for tsc's incremental compile. Only a build
 * under dist-builds/ is copied: .tsbuildinfo names files relative to itself, so one from
 * another depth (an old in-place dist/) would make tsc recompile everything anyway.
 */
function seed(work) {
  let from;
  try {
    from = realpathSync(LINK);
  } catch {
    return; // no build yet
  }
  if (relative(realpathSync(BUILDS), from).includes('/') || !existsSync(join(from, STAMP))) return;
  try {
    cpSync(from, work, { recursive: true });
  } catch {
    // Removed while copied (a concurrent build's clean-up): compile from nothing instead.
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work);
  }
}

/** Points dist at dist-builds/`id` with one rename (a symlink renamed over a symlink). */
function install(id) {
  let existing = null;
  try {
    existing = lstatSync(LINK);
  } catch {
    // no dist yet
  }
  if (existing && !existing.isSymbolicLink()) {
    // dist/ built in place by an earlier version of this tool: moved aside once (a directory
    // cannot be renamed over), kept as an old build until nothing uses it.
    try {
      renameSync(LINK, join(BUILDS, `in-place-${Date.now()}-${process.pid}`));
    } catch (err) {
      if (err.code !== 'ENOENT') throw err; // a concurrent build moved it first
    }
  }
  const next = join(ROOT, `.dist-link-${process.pid}`);
  rmSync(next, { force: true });
  symlinkSync(join('dist-builds', id), next);
  renameSync(next, LINK);
}

/**
 * Removes builds no process can still need: not the current one, not one of the newest, not
 * one any process holds a file of open (/proc/<pid>/fd); and work directories whose build
 * process is gone. Best effort: another build may be cleaning up at the same time.
 */
function removeUnused() {
  const builds = realpathSync(BUILDS);
  const keep = new Set([readlinkSync(LINK).split('/').pop(), ...openBuilds(builds)]);
  const completed = [];
  for (const name of readdirSync(builds)) {
    const tmp = /^\.tmp-(\d+)-/.exec(name);
    if (tmp) {
      if (!alive(Number(tmp[1]))) rmSync(join(builds, name), { recursive: true, force: true });
      continue;
    }
    try {
      completed.push({ name, mtime: statSync(join(builds, name)).mtimeMs });
    } catch {
      // removed meanwhile
    }
  }
  completed.sort((a, b) => b.mtime - a.mtime);
  for (const { name } of completed.slice(0, KEEP_NEWEST)) keep.add(name);
  for (const { name } of completed) if (!keep.has(name)) rmSync(join(builds, name), { recursive: true, force: true });
}

/** The builds under `builds` that some process holds a file of open. */
function openBuilds(builds) {
  const open = new Set();
  let pids;
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return open; // no /proc: only the newest builds are kept
  }
  for (const pid of pids) {
    let fds;
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith(`${builds}/`)) open.add(target.slice(builds.length + 1).split('/')[0]);
      } catch {
        // closed meanwhile
      }
    }
  }
  return open;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}
