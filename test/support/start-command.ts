/**
 * The node arguments `npm start` runs the gateway with (flags, then the
 * bundled front, dist/server.js), read from package.json: tests that start
 * the gateway as its own process use exactly these, so what they measure
 * (RSS above all: --max-semi-space-size caps the front's young generation)
 * and what they exercise is what ships.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function npmStartNodeArgs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const start = pkg.scripts?.start ?? '';
  const args = /(?:^|&& )node ((?:--[\w-]+(?:=\S+)? )*dist\/server\.js)$/.exec(start)?.[1]?.split(' ');
  if (!args) throw new Error(`npm start (${JSON.stringify(start)}) does not end in "node [--flags] dist/server.js"`);
  return args;
}

/** The absolute path of the file `npm start` runs. */
export function serverEntry(root: string): string {
  return join(root, npmStartNodeArgs(root).at(-1) as string);
}
