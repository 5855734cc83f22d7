import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import xxhash from 'xxhash-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadPromptHasher, MAX_PREFIX_BLOCKS, promptBlocks, type PromptHasher } from './prefix-hash.js';

let hasher: PromptHasher;
let h32Raw: (b: Uint8Array, seed?: number) => number;
beforeAll(async () => {
  hasher = await loadPromptHasher(8);
  h32Raw = (await xxhash()).h32Raw;
});

/** The contract's rule written plainly: role, content (JSON text when not a string), cut into whole blocks, each hashed seeded with the one before. */
function reference(messages: { role: string; content: unknown }[], blockChars: number): number[] {
  const text = messages.map((m) => `${m.role}\u001f${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}\u001e`).join('');
  const out: number[] = [];
  let seed = 0;
  for (let i = 0; i < Math.min(MAX_PREFIX_BLOCKS, Math.floor(text.length / blockChars)); i++) {
    const h = h32Raw(new Uint8Array(Buffer.from(text.slice(i * blockChars, (i + 1) * blockChars), 'utf16le')), seed);
    seed = h;
    out.push(h === 0 ? 1 : h | 0);
  }
  return out;
}

const hashesOf = (h: PromptHasher, messages: { role: string; content: unknown }[]): number[] => {
  const out = promptBlocks();
  h.hash(messages, out);
  return Array.from(out.hashes.subarray(0, out.count));
};

describe('prompt block hashes', () => {
  it('are the contract rule: whole blocks of role + content, chained', () => {
    const messages = [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: [{ type: 'text', text: 'héllo 👋 wörld' }] },
    ];
    const got = hashesOf(hasher, messages);
    expect(got).toEqual(reference(messages, 8));
    expect(got.length).toBe(Math.floor(('system\u001fYou are a helpful assistant.\u001e'.length + 'user\u001f'.length + JSON.stringify(messages[1]!.content).length + 1) / 8));
  });

  it('a conversation that goes on keeps the blocks of its earlier turns', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: fc.string({ maxLength: 80 }) }), { minLength: 1, maxLength: 6 }), fc.string({ maxLength: 80 }), (turns, next) => {
        const before = hashesOf(hasher, turns);
        const after = hashesOf(hasher, [...turns, { role: 'user', content: next }]);
        expect(after.slice(0, before.length)).toEqual(before);
      }),
    );
  });

  it('a change anywhere changes that block and every block after it', () => {
    const base = 'a'.repeat(64);
    const a = hashesOf(hasher, [{ role: 'user', content: base }]);
    const b = hashesOf(hasher, [{ role: 'user', content: base.slice(0, 20) + 'b' + base.slice(21) }]);
    // "user\u001f" is 5 characters: character 20 of the content is character 25, in block 3.
    expect(b.slice(0, 3)).toEqual(a.slice(0, 3));
    for (let i = 3; i < a.length; i++) expect(b[i]).not.toBe(a[i]);
  });

  it('the role counts, and so does where a message ends', () => {
    const user = hashesOf(hasher, [{ role: 'user', content: 'x'.repeat(40) }]);
    const system = hashesOf(hasher, [{ role: 'system', content: 'x'.repeat(40) }]);
    expect(user[0]).not.toBe(system[0]);
    const split = hashesOf(hasher, [{ role: 'user', content: 'ab'.repeat(10) }, { role: 'user', content: 'ab'.repeat(10) }]);
    const joined = hashesOf(hasher, [{ role: 'user', content: 'ab'.repeat(20) }]);
    expect(split.slice(0, 3)).toEqual(joined.slice(0, 3));
    expect(split[3]).not.toBe(joined[3]);
  });

  it('only whole blocks, at most 256, never 0; a short prompt has none', () => {
    const out = promptBlocks();
    expect(hasher.hash([{ role: 'u', content: 'abc' }], out)).toBe(0);
    expect(hasher.hash([{ role: 'user', content: 'z'.repeat(100_000) }], out)).toBe(256);
    expect(out.chars).toBe(256 * 8);
    expect(Array.from(out.hashes).includes(0)).toBe(false);
  });

  it('messages that are not objects, and absent or odd roles and contents, are read without a throw', () => {
    const out = promptBlocks();
    const odd = [null, 3, { content: 'no role at all, long enough' }, { role: 7, content: null }, { role: 'tool' }] as unknown as { role: string; content: unknown }[];
    expect(() => hasher.hash(odd, out)).not.toThrow();
    expect(out.count).toBeGreaterThan(0);
  });

  it('refuses a block size that is not a positive integer', async () => {
    await expect(loadPromptHasher(0)).rejects.toThrow(/prefix_block_chars/);
    await expect(loadPromptHasher(1.5)).rejects.toThrow(/prefix_block_chars/);
  });

  it('allocates nothing per block: hashing a 16 K-character prompt again and again grows no heap (the built module, in plain node)', () => {
    // Measured in a plain node process on dist/ (what the worker threads run): under vitest's module
    // runner V8 does not inline xxhash-wasm's h32Raw, so its unsigned result is boxed on every call.
    const script = `
      const { loadPromptHasher, promptBlocks } = await import(${JSON.stringify(pathToFileURL(path.resolve('dist/protocol/prefix-hash.js')).href)});
      const h = await loadPromptHasher(64);
      const messages = [{ role: 'system', content: 'lorem ipsum dolor sit amet '.repeat(700).slice(0, 16000) }, { role: 'user', content: 'and now?' }];
      const out = promptBlocks();
      for (let i = 0; i < 5000; i++) h.hash(messages, out);
      globalThis.gc();
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 2000; i++) h.hash(messages, out);
      console.log(JSON.stringify({ count: out.count, grown: process.memoryUsage().heapUsed - before }));`;
    const result = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' })) as { count: number; grown: number };
    expect(result.count).toBe(250);
    // 2,000 prompts of 250 blocks: one heap number per block would be 8 MB.
    expect(result.grown).toBeLessThan(100_000);
  });
});
