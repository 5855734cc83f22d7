import { GCProfiler, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ChurnMap, ChurnSet } from './churn-tables.js';

setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;

interface Table {
  add(id: number, value: object): void;
  remove(id: number, value: object): void;
}

/** Bytes the scavenges moved into the old generation while `work` ran (v8.GCProfiler's per-collection space statistics). */
function promotedDuring(work: () => void): number {
  const profiler = new GCProfiler();
  profiler.start();
  work();
  const { statistics } = profiler.stop() as { statistics: Array<{ gcType: string; beforeGC: HeapSpaces; afterGC: HeapSpaces }> };
  let promoted = 0;
  for (const gc of statistics) {
    if (gc.gcType !== 'Scavenge') continue;
    promoted += Math.max(0, oldUsed(gc.afterGC) - oldUsed(gc.beforeGC));
  }
  return promoted;
}
type HeapSpaces = { heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }> };
const oldUsed = (s: HeapSpaces) => s.heapSpaceStatistics.find((x) => x.spaceName === 'old_space')?.spaceUsedSize ?? 0;

/** Calls in flight as the gateway keeps them: 64 at a time, each a small graph, added and deleted in order; a full collection after the first ones. */
function churn(table: Table, calls: number): void {
  const live: Array<[number, object]> = [];
  const step = (id: number) => {
    const value = { id, pieces: new Array(16).fill(id), text: `request ${id}`, done: () => id };
    table.add(id, value);
    live.push([id, value]);
    if (live.length > 64) {
      const [oldId, oldValue] = live.shift() as [number, object];
      table.remove(oldId, oldValue);
    }
  };
  for (let id = 0; id < 5_000; id++) step(id);
  // The first full collection moves the table to the old generation, as one does in a gateway under load.
  fullGc();
  for (let id = 5_000; id < 5_000 + calls; id++) step(id);
}

const CALLS = 200_000;

describe('ChurnMap and ChurnSet', () => {
  it('keep finished entries from being promoted after a full collection, where a Map and a Set promote nearly all of them', () => {
    const nativeMap = new Map<number, object>();
    const churnMap = new ChurnMap<number, object>();
    const nativeSet = new Set<object>();
    const churnSet = new ChurnSet<object>();
    const tables: Record<string, Table> = {
      'native Map': { add: (id, v) => nativeMap.set(id, v), remove: (id) => nativeMap.delete(id) },
      ChurnMap: { add: (id, v) => churnMap.set(id, v), remove: (id) => churnMap.delete(id) },
      'native Set': { add: (_, v) => nativeSet.add(v), remove: (_, v) => nativeSet.delete(v) },
      ChurnSet: { add: (_, v) => churnSet.add(v), remove: (_, v) => churnSet.delete(v) },
    };
    const promoted = Object.fromEntries(Object.entries(tables).map(([name, table]) => [name, promotedDuring(() => churn(table, CALLS))]));
    // The native tables show the effect the test is about (each call's graph is ~300 bytes)...
    expect(promoted['native Map']).toBeGreaterThan(10 * 1024 * 1024);
    expect(promoted['native Set']).toBeGreaterThan(10 * 1024 * 1024);
    // ...and the churn tables do not have it: at most the entries of the tables dropped before the first renewal.
    expect(promoted.ChurnMap).toBeLessThan(2 * 1024 * 1024);
    expect(promoted.ChurnSet).toBeLessThan(2 * 1024 * 1024);
  });

  it('behave as a Map and a Set: size, lookups, deletes, and a walk that survives deletes and renewals', () => {
    const map = new ChurnMap<number, string>();
    const set = new ChurnSet<string>();
    for (let i = 0; i < 3_000; i++) {
      map.set(i, `v${i}`);
      set.add(`v${i}`);
    }
    for (let i = 0; i < 2_500; i++) {
      expect(map.delete(i)).toBe(true);
      expect(set.delete(`v${i}`)).toBe(true);
    }
    expect(map.delete(0)).toBe(false);
    expect(set.delete('v0')).toBe(false);
    expect(map.size).toBe(500);
    expect(set.size).toBe(500);
    expect(map.get(2_999)).toBe('v2999');
    expect(map.get(10)).toBeUndefined();
    // Deleting every entry while walking the list (1,000 deletes: a renewal happens on the way).
    const walked: number[] = [];
    for (const [key] of map.entries()) {
      walked.push(key);
      map.delete(key);
    }
    for (const value of set.values()) set.delete(value);
    expect(walked).toEqual(Array.from({ length: 500 }, (_, i) => 2_500 + i));
    expect(map.size).toBe(0);
    expect(set.size).toBe(0);
    map.set(7, 'again');
    expect(map.entries()).toEqual([[7, 'again']]);
  });
});
