/**
 * One replica's prefix index (CONTRACT.md, "Inference-aware routing",
 * Prefix affinity): the block hashes (protocol/prefix-hash.ts) of prompts
 * sent to the replica, least recently used dropped first past
 * `prefix_index_blocks`. It lives in a SharedArrayBuffer, one per replica,
 * so every worker thread reads and fills the same index, as they do the
 * deployment state (protocol/deployment-state.ts); the front makes it and
 * hands it to the workers.
 *
 * Layout, all Int32 (C = bound, T = table size, the power of two ≥ 2C):
 *
 *   header  [0..7]          lock (holder's worker + 1, 0 free), count, head (most
 *                           recent entry, -1 none), tail (least recent, -1 none),
 *                           C, T - 1, inserts, evictions
 *   entries [8 .. 8+4C)     per entry: key, prev, next (toward the tail), table slot
 *   table   [.. + 2T)       open addressing, linear probing: per slot key (0 empty), entry
 *
 * At the default bound (65,536) that is 1.5 MiB per replica.
 *
 * Lookups take no lock: they only read keys, with Atomics.load. Inserts
 * (the chosen replica, at the pick) take the replica's lock with one
 * compare-and-swap and hold it for one prompt's blocks (256 at most, a few
 * µs); a thread that finds it taken spins a bounded while and then gives up
 * that insert (the index is an approximation of the replica's cache, and the
 * next request of the session inserts the same blocks). The races accepted,
 * each costing one pick's precision and never a wrong count or a bound passed:
 *
 * - a lookup during an eviction's backward shift can miss a key that is
 *   moving one slot back (a false miss: the score is a block short);
 * - a lookup can see a key a moment before or after the insert that adds or
 *   evicts it.
 *
 * The bound, the list and the table are only ever changed under the lock, so
 * the count never passes the bound and the list stays whole. A worker that dies
 * holding the lock is cleared by `takeBack(worker)`, as the deployment state
 * takes back its in-flight share.
 */

const HEADER = 8;
const LOCK = 0;
const COUNT = 1;
const HEAD = 2;
const TAIL = 3;
const CAPACITY = 4;
const MASK = 5;
const INSERTS = 6;
const EVICTIONS = 7;

const ENTRY = 4;
const E_KEY = 0;
const E_PREV = 1;
const E_NEXT = 2;
const E_SLOT = 3;

/** `prefix_index_blocks`' default: the Inference Extension's LRU capacity per server is 31,250 blocks of 16 tokens; ours are 64 characters (about 16 tokens), and 65,536 is the contract's. */
export const DEFAULT_PREFIX_INDEX_BLOCKS = 65_536;
/** Tries at the lock before an insert is given up (each a compare-and-swap; a holder keeps it a few µs). */
const LOCK_SPINS = 20_000;

/** What a thread needs to open a replica's index: the memory and its bound. */
export interface PrefixIndexMemory {
  readonly buffer: SharedArrayBuffer;
  readonly blocks: number;
}

function tableSize(blocks: number): number {
  let t = 2;
  while (t < blocks * 2) t *= 2;
  return t;
}

/** The memory of one replica's index, bounded by `blocks` entries. */
export function prefixIndexMemory(blocks: number = DEFAULT_PREFIX_INDEX_BLOCKS): PrefixIndexMemory {
  if (!Number.isInteger(blocks) || blocks < 1) throw new RangeError(`prefix_index_blocks must be a positive integer (got ${blocks})`);
  const t = tableSize(blocks);
  const buffer = new SharedArrayBuffer((HEADER + blocks * ENTRY + t * 2) * 4);
  const i32 = new Int32Array(buffer);
  i32[HEAD] = -1;
  i32[TAIL] = -1;
  i32[CAPACITY] = blocks;
  i32[MASK] = t - 1;
  return { buffer, blocks };
}

export class PrefixIndex {
  readonly blocks: number;
  readonly #i32: Int32Array;
  readonly #entries: number;
  readonly #table: number;
  readonly #mask: number;
  /** This thread's mark on the lock. */
  readonly #owner: number;

  constructor(memory: PrefixIndexMemory, worker: number) {
    this.#i32 = new Int32Array(memory.buffer);
    this.blocks = this.#i32[CAPACITY] as number;
    this.#mask = this.#i32[MASK] as number;
    this.#entries = HEADER;
    this.#table = HEADER + this.blocks * ENTRY;
    this.#owner = worker + 1;
  }

  /** Entries held now (never more than `blocks`). */
  size(): number {
    return Atomics.load(this.#i32, COUNT);
  }

  /** Blocks inserted new (not refreshed) and blocks evicted, since the index was made. */
  counts(): { inserts: number; evictions: number } {
    return { inserts: Atomics.load(this.#i32, INSERTS), evictions: Atomics.load(this.#i32, EVICTIONS) };
  }

  /** Whether the index holds `key` (a block hash, never 0). No lock, no allocation. */
  has(key: number): boolean {
    return this.#find(key) >= 0;
  }

  /**
   * The share of the prompt's leading blocks found here: the blocks before the
   * first one missing, over all the prompt's blocks (0 for a prompt of no block).
   *
   * A binary search, about 9 lookups for 256 blocks, not one per block: the
   * blocks an index holds are closed under prefixes. Block j's hash is chained
   * from blocks 0..j-1, so any prompt that touched it touched them too, in the
   * same insert (all or nothing, under the lock) and more recently (`insert`
   * makes the first block the most recent); so under strict LRU block j is
   * never held without blocks 0..j-1. Only a race with an insert in flight, or a
   * 32-bit collision, can break that for one pick, and then the score is off
   * by the blocks between two probes (the cost of an approximate index).
   */
  score(hashes: Int32Array, count: number): number {
    if (count === 0) return 0;
    // Invariant: blocks [0, lo) found; block hi missing (hi = count: none known missing).
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#find(hashes[mid] as number) >= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo / count;
  }

  /**
   * Adds a prompt's blocks, or makes them the most recent when present, the
   * first block most recent of all: under pressure a prefix loses its tail
   * first, as vLLM frees a request's blocks tail first. Returns false when
   * another thread held the lock too long (nothing was added).
   */
  insert(hashes: Int32Array, count: number): boolean {
    if (count === 0) return true;
    if (!this.#lock()) return false;
    try {
      for (let i = count - 1; i >= 0; i--) this.#touch(hashes[i] as number);
    } finally {
      Atomics.store(this.#i32, LOCK, 0);
    }
    return true;
  }

  /** The keys from most to least recent (tests and status; allocates). */
  keys(): number[] {
    const out: number[] = [];
    const i32 = this.#i32;
    for (let e = Atomics.load(i32, HEAD); e >= 0 && out.length <= this.blocks; e = Atomics.load(i32, this.#entries + e * ENTRY + E_NEXT)) {
      out.push(Atomics.load(i32, this.#entries + e * ENTRY + E_KEY));
    }
    return out;
  }

  /** Empties the index (a replica whose server restarted holds nothing). */
  clear(): void {
    if (!this.#lock()) return;
    try {
      this.#empty();
    } finally {
      Atomics.store(this.#i32, LOCK, 0);
    }
  }

  #empty(): void {
    const i32 = this.#i32;
    for (let i = this.#table; i < this.#table + (this.#mask + 1) * 2; i += 2) Atomics.store(i32, i, 0);
    Atomics.store(i32, COUNT, 0);
    Atomics.store(i32, HEAD, -1);
    Atomics.store(i32, TAIL, -1);
  }

  /**
   * A worker died: a lock it held is freed. What it was inserting may be half
   * done, so the index is emptied first (it only costs the replica's affinity
   * until the next prompts refill it); no other thread can take the lock meanwhile.
   */
  takeBack(worker: number): void {
    const i32 = this.#i32;
    if (Atomics.load(i32, LOCK) !== worker + 1) return;
    this.#empty();
    Atomics.compareExchange(i32, LOCK, worker + 1, 0);
  }

  #lock(): boolean {
    for (let i = 0; i < LOCK_SPINS; i++) {
      if (Atomics.compareExchange(this.#i32, LOCK, 0, this.#owner) === 0) return true;
    }
    return false;
  }

  /** The table slot holding `key`, or -1. Bounded by the table size even if a race left no empty slot on the way. */
  #find(key: number): number {
    const i32 = this.#i32;
    const mask = this.#mask;
    const table = this.#table;
    let s = key & mask;
    for (let n = 0; n <= mask; n++) {
      const k = Atomics.load(i32, table + s * 2);
      if (k === key) return s;
      if (k === 0) return -1;
      s = (s + 1) & mask;
    }
    return -1;
  }

  /** Under the lock: `key` becomes the most recent entry, added (evicting the least recent when full) if absent. */
  #touch(key: number): void {
    const i32 = this.#i32;
    const slot = this.#find(key);
    if (slot >= 0) {
      this.#toHead(i32[this.#table + slot * 2 + 1] as number);
      return;
    }
    let e: number;
    const count = i32[COUNT] as number;
    if (count < this.blocks) {
      e = count;
      Atomics.store(i32, COUNT, count + 1);
    } else {
      e = i32[TAIL] as number;
      this.#unlink(e);
      this.#remove(i32[this.#entries + e * ENTRY + E_SLOT] as number);
      Atomics.add(i32, EVICTIONS, 1);
    }
    const base = this.#entries + e * ENTRY;
    i32[base + E_KEY] = key;
    this.#linkHead(e);
    let s = key & this.#mask;
    while (i32[this.#table + s * 2] !== 0) s = (s + 1) & this.#mask;
    i32[this.#table + s * 2 + 1] = e;
    i32[base + E_SLOT] = s;
    // The key last: a lock-free reader that sees it also sees its entry.
    Atomics.store(i32, this.#table + s * 2, key);
    Atomics.add(i32, INSERTS, 1);
  }

  #toHead(e: number): void {
    if ((this.#i32[HEAD] as number) === e) return;
    this.#unlink(e);
    this.#linkHead(e);
  }

  #unlink(e: number): void {
    const i32 = this.#i32;
    const base = this.#entries + e * ENTRY;
    const prev = i32[base + E_PREV] as number;
    const next = i32[base + E_NEXT] as number;
    if (prev >= 0) i32[this.#entries + prev * ENTRY + E_NEXT] = next;
    else Atomics.store(i32, HEAD, next);
    if (next >= 0) i32[this.#entries + next * ENTRY + E_PREV] = prev;
    else Atomics.store(i32, TAIL, prev);
  }

  #linkHead(e: number): void {
    const i32 = this.#i32;
    const base = this.#entries + e * ENTRY;
    const head = i32[HEAD] as number;
    i32[base + E_PREV] = -1;
    i32[base + E_NEXT] = head;
    if (head >= 0) i32[this.#entries + head * ENTRY + E_PREV] = e;
    else Atomics.store(i32, TAIL, e);
    Atomics.store(i32, HEAD, e);
  }

  /** Empties table slot `s` and shifts back the keys after it that would no longer be found (linear probing's deletion, no tombstones). */
  #remove(s: number): void {
    const i32 = this.#i32;
    const mask = this.#mask;
    const table = this.#table;
    let hole = s;
    let j = s;
    for (;;) {
      j = (j + 1) & mask;
      const k = i32[table + j * 2] as number;
      if (k === 0) break;
      const home = k & mask;
      // The key at j may move into the hole when its home is not in (hole, j], cyclically.
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (between) continue;
      const e = i32[table + j * 2 + 1] as number;
      i32[table + hole * 2 + 1] = e;
      Atomics.store(i32, table + hole * 2, k);
      i32[this.#entries + e * ENTRY + E_SLOT] = hole;
      hole = j;
    }
    Atomics.store(i32, table + hole * 2, 0);
  }
}
