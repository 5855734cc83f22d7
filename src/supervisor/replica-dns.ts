/**
 * The front's resolver of `replicas: dns` (CONTRACT.md, Inference-aware
 * routing, Replicas): each such entry's api_base host is resolved every
 * `dns_refresh` seconds, with the system resolver (`dns.lookup`, all
 * addresses, so `/etc/hosts` counts) or by asking the entry's
 * `dns_servers` (A and AAAA). When an answer changes, `onChange` is called
 * and the gateway swaps the routed config as a reload does
 * (src/gateway.ts): replicas that appear get a state slot, those that go
 * take no new call, finish the ones in flight, and their slot is retired.
 *
 * Nothing here is on a request's path: a request routes with the replicas
 * of the last answer. A failure (an error, a timeout, or an empty answer:
 * NXDOMAIN or no A/AAAA records) keeps the last good answer, so a DNS
 * hiccup never empties a group; replicas leave only when the name resolves
 * to other addresses. Each change between answering and failing is logged
 * once. One resolution of an entry at a time; the next is due
 * `dns_refresh` after the last one ended.
 */
import { promises as dns } from 'node:dns';
import type { Logger } from 'pino';
import { sortAddresses, type DnsReplicaSet, type DnsSettings } from '../config/replicas.js';
import { Health, type HealthCheck } from '../health/types.js';

/** The addresses of a name, or a rejection. */
export type ResolveAddresses = (settings: DnsSettings) => Promise<readonly string[]>;

/** How long one question to a `dns_servers` server waits, and how often it is asked, before the answer counts as failed. */
const SERVER_TIMEOUT_MS = 1_000;
const SERVER_TRIES = 2;

/** The addresses of `settings.host`: all the system resolver gives, or the A and AAAA records of the configured servers. */
export const resolveAddresses: ResolveAddresses = async ({ host, servers }) => {
  if (servers.length === 0) {
    const found = await dns.lookup(host, { all: true, verbatim: true });
    return found.map((a) => a.address);
  }
  const resolver = new dns.Resolver({ timeout: SERVER_TIMEOUT_MS, tries: SERVER_TRIES });
  resolver.setServers([...servers]);
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  if (v4.status === 'rejected' && v6.status === 'rejected') throw v4.reason;
  return [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
};

/** What /status says of a DNS set's resolution. */
export interface DnsResolution {
  /** `resolving`: the first resolution has not ended; `ok`: the last one answered; `failing`: it failed, and the last good answer (maybe none) is kept. */
  readonly state: 'resolving' | 'ok' | 'failing';
  /** The addresses now routed to (the last good answer), sorted. */
  readonly addresses: readonly string[];
  /** Date.now() of the last good answer; null before one. */
  readonly resolvedAt: number | null;
  /** Why the last resolution failed; null when it answered. */
  readonly error: string | null;
}

class Resolution {
  addresses: readonly string[] = [];
  resolvedAt: number | null = null;
  error: string | null = null;
  /** Resolved at least once, successfully or not. */
  tried = false;
  timer: NodeJS.Timeout | null = null;
  stopped = false;
  /** Settles when the first resolution has ended. */
  readonly first: Promise<void>;
  endFirst!: () => void;

  constructor(
    readonly set: DnsReplicaSet,
    readonly key: string,
  ) {
    this.first = new Promise((resolve) => (this.endFirst = resolve));
  }

  get state(): DnsResolution['state'] {
    return !this.tried ? 'resolving' : this.error !== null ? 'failing' : 'ok';
  }
}

export class ReplicaDns {
  readonly #log: Logger;
  readonly #onChange: () => void;
  readonly #resolve: ResolveAddresses;
  readonly #byEntry = new Map<string, Resolution>();
  /** An answer changed but the swap failed: the next answer applies it again, changed or not. */
  #unapplied = false;

  /** `onChange` is called after an answer changed the addresses of a set (never during `update`). */
  constructor(log: Logger, onChange: () => void, resolve: ResolveAddresses = resolveAddresses) {
    this.#log = log;
    this.#onChange = onChange;
    this.#resolve = resolve;
  }

  /**
   * The sets of a (re)loaded config. A set whose entry id, host, port, servers and refresh are
   * unchanged keeps its resolution and last answer (so its replicas keep their ids and state);
   * any other starts resolving at once; a set no longer configured stops.
   */
  update(sets: readonly DnsReplicaSet[]): void {
    const keep = new Set<string>();
    for (const set of sets) {
      const key = keyOf(set);
      keep.add(set.entry.id);
      const running = this.#byEntry.get(set.entry.id);
      if (running?.key === key) continue;
      if (running) this.#stop(running);
      const resolution = new Resolution(set, key);
      this.#byEntry.set(set.entry.id, resolution);
      void this.#run(resolution);
    }
    for (const [entry, resolution] of this.#byEntry) {
      if (keep.has(entry)) continue;
      this.#stop(resolution);
      this.#byEntry.delete(entry);
    }
  }

  /** Entry id → the addresses to route to, for each of `sets` resolved as it says (a set that `update` would restart has none). */
  answersFor(sets: readonly DnsReplicaSet[]): ReadonlyMap<string, readonly string[]> {
    const out = new Map<string, readonly string[]>();
    for (const set of sets) {
      const r = this.#byEntry.get(set.entry.id);
      if (r?.key === keyOf(set)) out.set(set.entry.id, r.addresses);
    }
    return out;
  }

  status(entry: string): DnsResolution | null {
    const r = this.#byEntry.get(entry);
    return r ? { state: r.state, addresses: r.addresses, resolvedAt: r.resolvedAt, error: r.error } : null;
  }

  /** Resolves once every set has tried once, or after `ms`, whichever is first (the start waits this little for its replicas). */
  async firstAnswers(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    await Promise.race([Promise.all([...this.#byEntry.values()].map((r) => r.first)), late]);
    clearTimeout(timer);
  }

  /**
   * Unhealthy while a set has no answer at all (its alias answers 503 no_deployment_available),
   * degraded while one fails on its last good answer. Not required for readiness: every pod asks
   * the same DNS, and one alias's missing name must not take every alias of every pod out.
   */
  check(): HealthCheck {
    return {
      name: 'replicas_dns',
      requiredForReadiness: false,
      check: () => {
        const states = [...this.#byEntry.values()];
        const unresolved = states.filter((r) => r.resolvedAt === null);
        if (unresolved.length > 0) return Health.unhealthy(`no replicas yet for ${unresolved.map((r) => `${r.set.entry.id} (${r.set.dns.host}: ${r.error ?? 'resolving'})`).join(', ')}`);
        const failing = states.filter((r) => r.error !== null);
        if (failing.length > 0) return Health.degraded(`resolution failing, last answer kept, for ${failing.map((r) => `${r.set.entry.id} (${r.set.dns.host}: ${r.error})`).join(', ')}`);
        return Health.healthy();
      },
    };
  }

  stop(): void {
    for (const r of this.#byEntry.values()) this.#stop(r);
    this.#byEntry.clear();
  }

  #stop(r: Resolution): void {
    r.stopped = true;
    if (r.timer !== null) clearTimeout(r.timer);
    r.endFirst();
  }

  async #run(r: Resolution): Promise<void> {
    const { set } = r;
    const fields = { entry: set.entry.id, model: set.entry.alias, host: set.dns.host, servers: set.dns.servers.length > 0 ? set.dns.servers : 'system' };
    let addresses: readonly string[] | null = null;
    let error: string | null = null;
    try {
      const found = sortAddresses(await this.#resolve(set.dns));
      if (found.length === 0) error = 'the name has no A or AAAA record';
      else addresses = found;
    } catch (err) {
      error = describe(err);
    }
    if (r.stopped) return;
    const wasFailing = r.tried && r.error !== null;
    r.tried = true;
    if (addresses !== null) {
      const before = r.addresses;
      const changed = before.length !== addresses.length || before.some((a, i) => a !== addresses[i]);
      r.addresses = addresses;
      r.resolvedAt = Date.now();
      r.error = null;
      if (wasFailing) this.#log.info({ event: 'replicas_resolve_recovered', ...fields }, `replicas of ${set.entry.id}: ${set.dns.host} resolves again`);
      if (changed || this.#unapplied) {
        const added = addresses.filter((a) => !before.includes(a));
        const removed = before.filter((a) => !addresses.includes(a));
        this.#log.info({ event: 'replicas_changed', ...fields, addresses, added, removed }, `replicas of ${set.entry.id}: ${addresses.join(', ')}`);
        this.#changed();
      }
    } else {
      r.error = error;
      if (!wasFailing) {
        const kept = r.addresses.length > 0 ? `keeping the last answer (${r.addresses.join(', ')})` : 'no replicas until it resolves';
        this.#log.warn({ event: 'replicas_resolve_failed', ...fields, error, kept: r.addresses }, `replicas of ${set.entry.id}: cannot resolve ${set.dns.host} (${error}); ${kept}`);
      }
    }
    r.endFirst();
    r.timer = setTimeout(() => void this.#run(r), set.dns.refreshMs);
    r.timer.unref();
  }

  #changed(): void {
    try {
      this.#onChange();
      this.#unapplied = false;
    } catch (err) {
      this.#unapplied = true;
      // The swap failed (no room for new slots): the routed config stays as it was; the next change tries again.
      this.#log.error({ event: 'replicas_apply_failed', error: describe(err) }, `replicas changed but the routing config was not swapped: ${describe(err)}`);
    }
  }
}

/** What makes two configs' sets the same resolution: its name, port, servers and period. */
const keyOf = (set: DnsReplicaSet): string => JSON.stringify([set.dns.host, set.dns.port, set.dns.servers, set.dns.refreshMs]);

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string } | null;
  return e?.code !== undefined ? `${e.code}${e.message && !e.message.includes(e.code) ? `: ${e.message}` : ''}` : String(e?.message ?? err);
}
