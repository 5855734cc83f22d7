/**
 * Map and Set for entries that come and go with every request (calls in
 * flight, open streams), which renew their hash table now and then.
 *
 * Why: V8 grows or rehashes a Map's table in the generation the old table
 * is in, and a full collection moves a young table to the old generation.
 * From then on every table the Map makes is old, and each one it drops
 * stays in the old-to-new remembered set until the next full collection,
 * holding the young entries it had when it was dropped: the scavenger
 * counts them live and promotes them, and whatever they hold. After the
 * first full collection a gateway under chat at concurrency 64 promoted
 * 10–12 MB/s of finished requests this way, against 0.1–0.2 MB/s before it
 * (`--trace-gc-nvp`, the front with one worker), and its old generation
 * grew to four times its live size before the next one. A Map built anew
 * from the live entries has a young table again.
 */

/** Deletes between renewals: a renewal copies the live entries, a few dozen under load. */
const RENEW_AFTER_DELETES = 1024;

/** Counts deletes; `due` says when the table is to be built anew. */
class Renewal {
  #deletes = 0;

  due(deleted: boolean): boolean {
    if (!deleted || ++this.#deletes < RENEW_AFTER_DELETES) return false;
    this.#deletes = 0;
    return true;
  }
}

export class ChurnMap<K, V> {
  #map = new Map<K, V>();
  readonly #renewal = new Renewal();

  get size(): number {
    return this.#map.size;
  }

  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  set(key: K, value: V): void {
    this.#map.set(key, value);
  }

  delete(key: K): boolean {
    const deleted = this.#map.delete(key);
    if (this.#renewal.due(deleted)) this.#map = new Map(this.#map);
    return deleted;
  }

  /** The entries now, as a list: deleting while walking it is safe. */
  entries(): Array<[K, V]> {
    return [...this.#map];
  }
}

export class ChurnSet<T> {
  #set = new Set<T>();
  readonly #renewal = new Renewal();

  get size(): number {
    return this.#set.size;
  }

  add(value: T): void {
    this.#set.add(value);
  }

  delete(value: T): boolean {
    const deleted = this.#set.delete(value);
    if (this.#renewal.due(deleted)) this.#set = new Set(this.#set);
    return deleted;
  }

  /** The values now, as a list: deleting while walking it is safe. */
  values(): T[] {
    return [...this.#set];
  }
}
