/**
 * golden.ts's update mode (issue 34): a run with UPDATE_GOLDEN=1 that rewrites a golden file
 * fails that file's test, a file anchored outside the translator (`source`) is never rewritten,
 * and the mode is refused under CI.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { goldenFiles, goldenUpdateMode } from './golden.js';

interface Case {
  about: string;
  source?: string;
  input: number;
  output: unknown;
}

let dir: string;
const write = (name: string, body: Case) => writeFileSync(join(dir, name), `${JSON.stringify(body, null, 2)}\n`);
const read = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Case;
const only = (env: Record<string, string | undefined>, name: string) => goldenFiles<Case>(dir, 'x-', env).find((g) => g.name === name)!;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'golden-'));
  write('x-made.json', { about: 'written with the translator', input: 1, output: { a: 1 } });
  write('x-anchored.json', { about: 'anchored', source: 'vendor/sdk@0000 tests/x.json:1', input: 1, output: { a: 1 } });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('without UPDATE_GOLDEN', () => {
  it('a match passes, a mismatch fails and the file is left as it was', () => {
    only({}, 'x-made.json').expectAt('output', { a: 1 });
    expect(() => only({}, 'x-made.json').expectAt('output', { a: 2 })).toThrow();
    expect(read('x-made.json').output).toEqual({ a: 1 });
  });
});

describe('UPDATE_GOLDEN=1', () => {
  const env = { UPDATE_GOLDEN: '1' };

  it('a file that would change is rewritten AND its test fails: a rewriting run never passes', () => {
    expect(() => only(env, 'x-made.json').expectAt('output', { a: 2 })).toThrow(/x-made\.json: "output" rewritten; review the diff and run again without UPDATE_GOLDEN/);
    expect(read('x-made.json')).toEqual({ about: 'written with the translator', input: 1, output: { a: 2 } });
    // The next run, without the mode, checks the rewritten file.
    only({}, 'x-made.json').expectAt('output', { a: 2 });
  });

  it('a file that already matches is checked, not touched', () => {
    const before = readFileSync(join(dir, 'x-made.json'), 'utf8');
    only(env, 'x-made.json').expectAt('output', { a: 1 });
    expect(readFileSync(join(dir, 'x-made.json'), 'utf8')).toBe(before);
  });

  it('a file anchored outside the translator (`source`) is never rewritten: the mismatch fails as a mismatch', () => {
    const golden = only(env, 'x-anchored.json');
    expect(golden.source).toBe('vendor/sdk@0000 tests/x.json:1');
    expect(() => golden.expectAt('output', { a: 2 })).toThrow(/anchored outside the translator/);
    expect(read('x-anchored.json').output).toEqual({ a: 1 });
  });
});

describe('UPDATE_GOLDEN under CI', () => {
  it.each(['true', '1', 'yes'])('CI=%s: refused before any file is read or written', (ci) => {
    expect(() => goldenUpdateMode({ UPDATE_GOLDEN: '1', CI: ci })).toThrow(/UPDATE_GOLDEN=1 is refused under CI/);
    expect(() => goldenFiles<Case>(dir, 'x-', { UPDATE_GOLDEN: '1', CI: ci })).toThrow(/refused under CI/);
    expect(read('x-made.json').output).toEqual({ a: 1 });
  });

  it('CI alone, or CI=false with UPDATE_GOLDEN, is no refusal', () => {
    expect(goldenUpdateMode({ CI: 'true' })).toBe(false);
    expect(goldenUpdateMode({ UPDATE_GOLDEN: '1', CI: 'false' })).toBe(true);
  });
});
