// The profiler (`npm run profile`) reads CPU profiles of the bundles npm start runs; "CPU by
// package" needs each frame named by the file it was bundled from. unbundle() does that through
// the bundles' source maps, checked here on the real bundles that `npm test` builds.
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: loadtest/ is plain JavaScript, without declarations.
import { unbundle } from '../loadtest/profile-tree.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The 0-based line and column of the first occurrence of `text` in `file`. */
function positionOf(file: string, text: string): { lineNumber: number; columnNumber: number } {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const lineNumber = lines.findIndex((l) => l.includes(text));
  expect(lineNumber, `${text} in ${file}`).toBeGreaterThanOrEqual(0);
  return { lineNumber, columnNumber: (lines[lineNumber] as string).indexOf(text) };
}

/** The 0-based line of `text` in a source file. */
const sourceLine = (file: string, text: string) => positionOf(file, text).lineNumber;

/** V8 names a module by its real path: dist is a symlink to the build, dist-builds/<id> (tools/build.mjs). */
const realUrl = (file: string) => pathToFileURL(realpathSync(join(root, file))).href;

function frameAt(id: number, functionName: string, file: string, text: string): ProfileNode {
  return { id, callFrame: { functionName, url: realUrl(file), ...positionOf(file, text) } };
}

describe('unbundle: CPU profile frames of the bundles named by their sources', () => {
  it('a frame in dist/server.js and one in dist/worker/entry.js get the .ts file and line they were bundled from; other frames stay as they are', () => {
    const front = frameAt(2, 'workerEntryPath', 'dist/server.js', 'function workerEntryPath(');
    const worker = frameAt(3, 'checkCompatible', 'dist/worker/entry.js', 'function checkCompatible(');
    const internal: ProfileNode = { id: 4, callFrame: { functionName: 'writeBuffer', url: '', lineNumber: -1, columnNumber: -1 } };
    const library: ProfileNode = { id: 5, callFrame: { functionName: 'x', url: realUrl('dist/src/index.js'), lineNumber: 3, columnNumber: 0 } };
    const rootNode: ProfileNode = { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 }, children: [2, 3, 4, 5] };
    const profile = { nodes: [rootNode, front, worker, internal, library], startTime: 0, endTime: 1, samples: [2, 3], timeDeltas: [0, 1] };

    const out = unbundle(profile) as typeof profile;
    const byId = new Map(out.nodes.map((n) => [n.id, n.callFrame]));

    expect(byId.get(2)?.url).toBe(pathToFileURL(join(root, 'src/supervisor/worker-pool.ts')).href);
    expect(byId.get(2)?.lineNumber).toBe(sourceLine('src/supervisor/worker-pool.ts', 'function workerEntryPath('));
    expect(byId.get(3)?.url).toBe(pathToFileURL(join(root, 'workers/response-body.ts')).href);
    expect(byId.get(3)?.lineNumber).toBe(sourceLine('workers/response-body.ts', 'function checkCompatible('));
    expect(byId.get(4)).toEqual(internal.callFrame);
    expect(byId.get(5)).toEqual(library.callFrame);
    // The samples and the tree are untouched: only names change.
    expect(out.samples).toEqual(profile.samples);
    expect(out.nodes.map((n) => n.id)).toEqual(profile.nodes.map((n) => n.id));
  });
});
