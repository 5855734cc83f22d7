import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PREFIX_INDEX_BLOCKS, PrefixIndex, prefixIndexMemory } from './prefix-index.js';

const keys = (...k: number[]): Int32Array => Int32Array.from(k);
/** A prompt of `n` blocks whose hashes are distinct and never 0. */
const prompt = (from: number, n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => from + i + 1);

describe('prefix index', () => {
  it('a prompt inserted scores 1; one sharing only its first blocks scores their share; an unknown one 0', () => {
    const index = new PrefixIndex(prefixIndexMemory(64), 0);
    index.insert(keys(11, 12, 13, 14), 4);
    expect(index.score(keys(11, 12, 13, 14), 4)).toBe(1);
    expect(index.score(keys(11, 12, 99, 98), 4)).toBe(0.5);
    expect(index.score(keys(99, 98, 97, 96), 4)).toBe(0);
    expect(index.score(keys(), 0)).toBe(0);
    expect(index.size()).toBe(4);
  });

  it('evicts the least recently used; a prompt inserted again is the most recent; its first block is its most recent', () => {
    const index = new PrefixIndex(prefixIndexMemory(4), 0);
    index.insert(keys(1, 2), 2);
    index.insert(keys(3, 4), 2);
    expect(index.keys()).toEqual([3, 4, 1, 2]);
    index.insert(keys(1), 1);
    expect(index.keys()).toEqual([1, 3, 4, 2]);
    index.insert(keys(5, 6), 2);
    // 2 went first, then 4: the least recent.
    expect(index.keys()).toEqual([5, 6, 1, 3]);
    expect(index.has(2)).toBe(false);
    expect(index.has(4)).toBe(false);
    expect(index.counts()).toEqual({ inserts: 6, evictions: 2 });
  });

  it('the default bound is the contract one', () => {
    expect(DEFAULT_PREFIX_INDEX_BLOCKS).toBe(65_536);
    expect(prefixIndexMemory().blocks).toBe(65_536);
    expect(() => prefixIndexMemory(0)).toThrow(/prefix_index_blocks/);
  });

  it('property: never past its bound, agrees with a model LRU, and a prompt just inserted scores 1 while it fits', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        // Small key spaces, negatives included, so keys collide in the table and are evicted and re-inserted.
        fc.array(fc.array(fc.integer({ min: -30, max: 30 }).filter((k) => k !== 0), { minLength: 0, maxLength: 12 }), { maxLength: 60 }),
        (bound, prompts) => {
          const index = new PrefixIndex(prefixIndexMemory(bound), 0);
          const model: number[] = []; // most recent first
          for (const p of prompts) {
            index.insert(Int32Array.from(p), p.length);
            for (let i = p.length - 1; i >= 0; i--) {
              const at = model.indexOf(p[i]!);
              if (at >= 0) model.splice(at, 1);
              model.unshift(p[i]!);
              if (model.length > bound) model.pop();
            }
            expect(index.size()).toBeLessThanOrEqual(bound);
            expect(index.keys()).toEqual(model);
            for (const k of model) expect(index.has(k)).toBe(true);
            if (new Set(p).size <= bound && p.length > 0) expect(index.score(Int32Array.from(p), p.length)).toBe(1);
          }
          for (let k = -30; k <= 30; k++) if (k !== 0) expect(index.has(k)).toBe(model.includes(k));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: the score (a binary search) is the share of leading blocks found, for chained prompts under eviction', () => {
    // Prompts are paths in a small tree of choices, so block j's key stands for blocks 0..j as chained hashes do.
    const ids = new Map<string, number>();
    const chain = (choices: number[]): Int32Array => {
      const out = new Int32Array(choices.length);
      let path = '';
      for (let j = 0; j < choices.length; j++) {
        path += `/${choices[j]}`;
        let id = ids.get(path);
        if (id === undefined) ids.set(path, (id = ids.size + 1));
        out[j] = id;
      }
      return out;
    };
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.array(fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 20 }), { minLength: 1, maxLength: 40 }), (bound, prompts) => {
        const index = new PrefixIndex(prefixIndexMemory(bound), 0);
        for (const p of prompts) {
          index.insert(chain(p), p.length);
          for (const q of prompts) {
            const hashes = chain(q);
            let leading = 0;
            while (leading < q.length && index.has(hashes[leading]!)) leading++;
            expect(index.score(hashes, q.length)).toBe(q.length === 0 ? 0 : leading / q.length);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('two views on the same memory (two threads) see each other\'s inserts and share one bound', () => {
    const memory = prefixIndexMemory(300);
    const a = new PrefixIndex(memory, 0);
    const b = new PrefixIndex(memory, 1);
    a.insert(prompt(0, 200), 200);
    expect(b.score(prompt(0, 200), 200)).toBe(1);
    b.insert(prompt(1000, 200), 200);
    expect(a.size()).toBe(300);
    expect(b.size()).toBe(300);
    expect(a.score(prompt(1000, 200), 200)).toBe(1);
    // The first prompt's tail went first (its first blocks were its most recent).
    expect(a.score(prompt(0, 200), 200)).toBe(0.5);
  });

  it('a lock held by another thread makes an insert give up instead of waiting; takeBack frees a dead worker\'s lock and empties the index', () => {
    const memory = prefixIndexMemory(16);
    const a = new PrefixIndex(memory, 0);
    a.insert(keys(1, 2, 3), 3);
    const raw = new Int32Array(memory.buffer);
    raw[0] = 5; // worker 4 holds the lock, and died
    const b = new PrefixIndex(memory, 1);
    expect(b.insert(keys(7), 1)).toBe(false);
    expect(b.has(7)).toBe(false);
    b.takeBack(3); // not the holder: nothing changes
    expect(b.insert(keys(7), 1)).toBe(false);
    b.takeBack(4);
    expect(b.size()).toBe(0);
    expect(b.insert(keys(7), 1)).toBe(true);
    expect(a.keys()).toEqual([7]);
  });

  it('clear empties it', () => {
    const index = new PrefixIndex(prefixIndexMemory(8), 0);
    index.insert(keys(1, 2, 3), 3);
    index.clear();
    expect(index.size()).toBe(0);
    expect(index.has(1)).toBe(false);
    index.insert(keys(4), 1);
    expect(index.keys()).toEqual([4]);
  });
});
