/**
 * One deployment's scraper (CONTRACT.md, Inference-aware routing: Signals):
 * a loop on the front thread that reads the server's Prometheus text at
 * `<api_base origin>/metrics` every `metrics_interval_ms`, parses it
 * (server-metrics.ts) and writes the figures into the deployment's slot of
 * the shared state (protocol/deployment-state.ts), where every worker's
 * pick reads them. One loop per deployment with server_metrics, one per pod
 * (src/inference/fleet.ts keeps them), never one per worker thread.
 *
 * - Never overlapping itself: the next scrape starts `interval` after the
 *   last one started, or at once when that one took longer.
 * - A short timeout, min(interval, 1 s), from the request's start to the
 *   body's end: a slow endpoint costs one missed scrape, and its figures go
 *   stale on their own (stale after max(2 s, 3 intervals), read by the pick).
 * - Nothing here is on a request's path: a failing, slow or garbage endpoint
 *   only counts a failure (switchyard_inference_scrape_failures_total) and
 *   leaves the last good figures to age.
 * - A scrape counts only when it has all three figures (waiting, running,
 *   KV-cache use); a body without one of them (garbage, a cut body, another
 *   server's names) is a failure, so a replica is never scored on half its
 *   figures.
 * - node:http, not fetch: the front never loads undici (~20 MB of RSS,
 *   docs/ARCHITECTURE.md). One keep-alive socket per scraper.
 */
import http from 'node:http';
import https from 'node:https';
import type { ServerMetricsKind } from '../../protocol/config.js';
import type { DeploymentStates } from '../../protocol/deployment-state.js';
import { DEFAULT_MAX_METRICS_CHARS, parseServerMetrics } from './server-metrics.js';
import { pinnedLookup } from '../../protocol/pinned-lookup.js';

/** The longest a scrape may take, whatever the interval (CONTRACT.md: "a short timeout"). */
export const MAX_SCRAPE_TIMEOUT_MS = 1_000;

/** What one scraper reads and where it writes. */
export interface ScrapeTarget {
  readonly id: string;
  /** `<api_base origin>/metrics`. */
  readonly url: string;
  /** A DNS replica's address: the scrape connects there and keeps the URL's host name (Host, TLS name); null: the host's own. */
  readonly connectTo: string | null;
  readonly kind: ServerMetricsKind;
  /** The deployment's slot in the shared state. */
  readonly slot: number;
  readonly intervalMs: number;
}

/** `<origin>/metrics` of an api_base. */
export function metricsUrl(apiBase: string): string {
  return `${new URL(apiBase).origin}/metrics`;
}

export class Scraper {
  readonly target: ScrapeTarget;
  /** Scrapes that gave no usable figures since this id was first scraped (carried across a restart of its loop). */
  failures: number;
  /** Why the last scrape failed; null after a good one. */
  lastError: string | null = null;
  /** Good scrapes by this loop (a test waits for the second after a change: it began after the change). */
  good = 0;
  readonly #states: DeploymentStates;
  readonly #agent: http.Agent;
  readonly #timeoutMs: number;
  #timer: NodeJS.Timeout | null = null;
  #request: http.ClientRequest | null = null;
  #stopped = false;
  /** Resolves after each scrape, good or not (tests wait on it). */
  #waiters: Array<() => void> = [];

  constructor(target: ScrapeTarget, states: DeploymentStates, failures = 0) {
    this.target = target;
    this.failures = failures;
    this.#states = states;
    this.#timeoutMs = Math.min(target.intervalMs, MAX_SCRAPE_TIMEOUT_MS);
    const secure = target.url.startsWith('https:');
    this.#agent = new (secure ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: 1 });
  }

  start(): void {
    this.#loop();
  }

  /** Stops the loop; a scrape under way is abandoned and writes nothing. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#request?.destroy();
    this.#agent.destroy();
    this.#settle();
  }

  /** Resolves once the next scrape has ended (good or failed). */
  next(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #loop(): void {
    if (this.#stopped) return;
    const started = Date.now();
    void this.#scrape().then(() => {
      if (this.#stopped) return;
      this.#settle();
      this.#timer = setTimeout(() => this.#loop(), Math.max(0, started + this.target.intervalMs - Date.now()));
      this.#timer.unref();
    });
  }

  #settle(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }

  async #scrape(): Promise<void> {
    let text: string;
    try {
      text = await this.#get();
    } catch (err) {
      return this.#failed(err instanceof Error ? err.message : String(err));
    }
    if (this.#stopped) return;
    const figures = parseServerMetrics(text, this.target.kind);
    const { waiting, running, kvCache } = figures;
    if (waiting === null || running === null || kvCache === null) {
      const missing = [waiting === null && 'waiting', running === null && 'running', kvCache === null && 'KV-cache use'].filter(Boolean).join(', ');
      return this.#failed(`no ${missing} figure in the ${this.target.kind} metrics`);
    }
    this.lastError = null;
    this.good++;
    this.#states.scraped(this.target.slot, Math.round(waiting), Math.round(running), kvCache, Date.now());
  }

  #failed(reason: string): void {
    if (this.#stopped) return;
    this.failures++;
    this.lastError = reason;
  }

  /** The body of a 200 answer, within the timeout and the size cap. */
  #get(): Promise<string> {
    return new Promise((resolve, reject) => {
      const get = this.target.url.startsWith('https:') ? https.get : http.get;
      const request = (this.#request = get(this.target.url, { agent: this.#agent, headers: { accept: 'text/plain' }, ...(this.target.connectTo === null ? {} : { lookup: pinnedLookup(this.target.connectTo) }) }, (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`status ${response.statusCode ?? 0}`));
        }
        response.setEncoding('utf8');
        let text = '';
        response.on('data', (chunk: string) => {
          text += chunk;
          if (text.length > DEFAULT_MAX_METRICS_CHARS) request.destroy(new Error(`body over ${DEFAULT_MAX_METRICS_CHARS} characters`));
        });
        response.on('end', () => resolve(text));
        response.on('error', reject);
      }));
      const timer = setTimeout(() => request.destroy(new Error(`no whole answer within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      request.on('error', reject);
      request.on('close', () => {
        clearTimeout(timer);
        this.#request = null;
        // A body cut short (the server closed, or a destroy above) rejects here if nothing settled first.
        reject(new Error('connection closed before the answer was whole'));
      });
    });
  }
}
