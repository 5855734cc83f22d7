/**
 * The front's keeper of inference-aware routing (CONTRACT.md, Inference-aware
 * routing for self-hosted servers): for every deployment with
 * `server_metrics`, its scraper (scraper.ts) and its prefix index
 * (protocol/prefix-index.ts), one per pod, keyed by deployment id as
 * src/supervisor/deployment-slots.ts keys state slots.
 *
 * `assign` follows every routing config swap (start, SIGHUP reload, a DNS
 * re-resolution of replicas): the worker pool calls it before the config
 * reaches any worker (src/supervisor/worker-pool.ts), and hands the indexes
 * it returns to every worker ahead of the config frame. An id that survives
 * keeps its index and its scraper; a new id gets both; an id that leaves has
 * its scraper stopped and the front lets go of its index (workers let go of
 * theirs when the config that drops it arrives; calls still running on the
 * old config keep their reference to it until they end, so nothing they
 * touch is freed under them). An index whose bound or block size changed is
 * made again, empty: its hashes would no longer match.
 */
import type { RoutingConfig } from '../../protocol/config.js';
import type { DeploymentStates } from '../../protocol/deployment-state.js';
import type { IndexGrant } from '../../protocol/frames.js';
import { PrefixIndex, prefixIndexMemory, type PrefixIndexMemory } from '../../protocol/prefix-index.js';
import { Scraper, metricsUrl, type ScrapeTarget } from './scraper.js';

/** One deployment's figures as /status shows them (`inferenceFigures`). */
export interface InferenceFigures {
  /** Null before the first good scrape. */
  readonly waiting: number | null;
  readonly running: number | null;
  readonly kv_cache: number | null;
  /** Milliseconds since the last good scrape; null when none was. */
  readonly metrics_age_ms: number | null;
  readonly prefix_index_entries: number;
}

interface Member {
  /** Its alias (a surviving id may move to another). */
  model: string;
  readonly slot: number;
  readonly memory: PrefixIndexMemory;
  /** The front's view: it only reads the count and takes back a dead worker's lock. */
  readonly index: PrefixIndex;
  /** prefix_block_chars the index's hashes were made with. */
  readonly blockChars: number;
  scraper: Scraper;
}

/** The front's mark on an index: it never takes the lock, so any worker number would do; this one is no worker's. */
const FRONT = -1;

export class InferenceFleet {
  readonly #states: DeploymentStates;
  readonly #members = new Map<string, Member>();
  #grant: IndexGrant = Object.freeze({});
  #closed = false;

  /** `states`: the front's view of the shared deployment state, where the scrapers write. */
  constructor(states: DeploymentStates) {
    this.#states = states;
  }

  /** The indexes of the config last assigned, by deployment id. */
  get grant(): IndexGrant {
    return this.#grant;
  }

  /**
   * Makes, keeps or drops each deployment's scraper and index for `routing` (its slots assigned),
   * and returns the indexes of all its deployments with server_metrics.
   */
  assign(routing: RoutingConfig): IndexGrant {
    const { inference } = routing.router;
    const wanted = new Set<string>();
    const grant: Record<string, PrefixIndexMemory> = {};
    routing.aliases.forEach((route, i) => {
      const slot = routing.slots[i];
      if (route.serverMetrics === null || route.apiBase === null || slot === undefined || this.#closed) return;
      wanted.add(route.id);
      const target: ScrapeTarget = { id: route.id, url: metricsUrl(route.apiBase), connectTo: route.connectTo, kind: route.serverMetrics, slot, intervalMs: inference.metricsIntervalMs };
      let member = this.#members.get(route.id);
      /** Failures counted for this id so far: switchyard_inference_scrape_failures_total never goes back. */
      let failures = 0;
      if (member !== undefined && (member.memory.blocks !== inference.prefixIndexBlocks || member.blockChars !== inference.prefixBlockChars || member.slot !== slot)) {
        member.scraper.stop();
        failures = member.scraper.failures;
        this.#members.delete(route.id);
        member = undefined;
      }
      if (member === undefined) {
        const memory = prefixIndexMemory(inference.prefixIndexBlocks);
        const scraper = new Scraper(target, this.#states, failures);
        member = { model: route.alias, slot, memory, index: new PrefixIndex(memory, FRONT), blockChars: inference.prefixBlockChars, scraper };
        this.#members.set(route.id, member);
        scraper.start();
      } else if (!sameTarget(member.scraper.target, target)) {
        // Another address or server kind, or another interval: a new loop, the failures counted on.
        member.scraper.stop();
        member.scraper = new Scraper(target, this.#states, member.scraper.failures);
        member.scraper.start();
      }
      member.model = route.alias;
      grant[route.id] = member.memory;
    });
    for (const [id, member] of this.#members) {
      if (wanted.has(id)) continue;
      member.scraper.stop();
      this.#members.delete(id);
    }
    this.#grant = Object.freeze(grant);
    return this.#grant;
  }

  /** `/status/models/{alias}`: a deployment's figures, or null when it has no server_metrics. */
  inferenceFigures(deploymentId: string, now: number = Date.now()): InferenceFigures | null {
    const member = this.#members.get(deploymentId);
    if (member === undefined) return null;
    const states = this.#states;
    const at = states.scrapedAt(member.slot);
    const entries = member.index.size();
    if (at === 0) return { waiting: null, running: null, kv_cache: null, metrics_age_ms: null, prefix_index_entries: entries };
    return { waiting: states.waiting(member.slot), running: states.running(member.slot), kv_cache: states.kvCache(member.slot), metrics_age_ms: Math.max(0, Math.round(now - at)), prefix_index_entries: entries };
  }

  /** switchyard_inference_scrape_failures_total: per deployment with server_metrics. */
  scrapeFailures(): Array<{ model: string; replica: string; failures: number }> {
    return [...this.#members].map(([id, m]) => ({ model: m.model, replica: id, failures: m.scraper.failures }));
  }

  /** The scraper of a deployment (tests: wait for its next scrape, read its last error). */
  scraperOf(deploymentId: string): Scraper | null {
    return this.#members.get(deploymentId)?.scraper ?? null;
  }

  /** A worker died: an index lock it held is freed (its half-made insert empties that index). */
  takeBack(worker: number): void {
    for (const member of this.#members.values()) member.index.takeBack(worker);
  }

  /** Stops every scraper (the gateway is closing). */
  close(): void {
    this.#closed = true;
    for (const member of this.#members.values()) member.scraper.stop();
    this.#members.clear();
  }
}

function sameTarget(a: ScrapeTarget, b: ScrapeTarget): boolean {
  return a.url === b.url && a.kind === b.kind && a.slot === b.slot && a.intervalMs === b.intervalMs;
}
