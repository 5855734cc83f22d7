/**
 * The node arguments `npm start` runs the gateway with (flags, then
 * dist/src/main.js), read from package.json: tests that start the gateway as
 * its own process use exactly these, so what they measure (RSS above all:
 * --max-semi-space-size caps the front's young generation) is what ships.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function npmStartNodeArgs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const start = pkg.scripts?.start ?? '';
  const args = /(?:^|&& )node ((?:--[\w-]+(?:=\S+)? )*dist\/src\/main\.js)$/.exec(start)?.[1]?.split(' ');
  if (!args) throw new Error(`npm start (${JSON.stringify(start)}) does not end in "node [--flags] dist/src/main.js"`);
  return args;
}
