/**
 * golden.ts's update mode (issue 34): a run with UPDATE_GOLDEN=1 that rewrites a golden file
 * fails that file's test, a file anchored outside the translator (`source`) is never rewritten,
 * and the mode is refused under CI; and every translator has goldens anchored outside it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

describe('every translator has goldens anchored outside it (issue 34): a reply, a stream with a tool call and an error, each citing its source', () => {
  const root = join(import.meta.dirname, '..');
  type Anchored = { name: string; body: Record<string, unknown> };
  const anchored = (dir: string): Anchored[] =>
    readdirSync(dir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => ({ name, body: JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown> }))
      .filter(({ body }) => typeof body.source === 'string');
  /** A source is a repository at a full commit with a path, or a documentation URL. */
  const cited = (source: string) => /^[\w.-]+\/[\w.-]+@[0-9a-f]{40} \S+/.test(source) && (/:\d+/.test(source) || /https:\/\//.test(source) || /\.(bin|txt)\b/.test(source));
  const hasToolCallChunk = (chunks: unknown) =>
    Array.isArray(chunks) && chunks.some((c) => typeof c === 'object' && c !== null && ((c as { choices?: Array<{ delta?: { tool_calls?: unknown } }> }).choices ?? []).some((choice) => Array.isArray(choice.delta?.tool_calls)));

  it.each(['anthropic', 'gemini', 'bedrock', 'azure'])('%s', (provider) => {
    const files = anchored(join(root, 'providers', provider, 'golden'));
    for (const { name, body } of files) expect(cited(body.source as string), `${name}: ${String(body.source)}`).toBe(true);
    expect(files.filter((f) => f.name.startsWith('response-')).length, 'an anchored reply').toBeGreaterThan(0);
    expect(files.filter((f) => f.name.startsWith('stream-') && hasToolCallChunk(f.body.chunks)).length, 'an anchored stream with a tool call').toBeGreaterThan(0);
    expect(files.filter((f) => f.name.startsWith('error-')).length, 'an anchored error').toBeGreaterThan(0);
  });

  it('responses (inbound)', () => {
    const files = anchored(join(root, 'inbound', 'responses', 'golden'));
    for (const { name, body } of files) expect(cited(body.source as string), `${name}: ${String(body.source)}`).toBe(true);
    const events = (f: Anchored) => (f.body.events as Array<{ event: string }> | undefined) ?? [];
    expect(files.filter((f) => f.name.startsWith('response-')).length, 'an anchored reply').toBeGreaterThan(0);
    expect(files.filter((f) => events(f).some((e) => e.event === 'response.function_call_arguments.delta')).length, 'an anchored stream with a tool call').toBeGreaterThan(0);
    expect(files.filter((f) => f.body.failure !== undefined && events(f).some((e) => e.event === 'response.failed')).length, 'an anchored failure').toBeGreaterThan(0);
  });
});
