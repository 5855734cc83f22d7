/**
 * The per-call timers of an upstream request: the whole request, the wait
 * for response headers, and the longest gap between two body chunks. Each
 * aborts the call with its own error code. Native timers, because undici's
 * own headers/body timeouts run on a ~0.5 s coarse clock and never fire
 * for idle limits under about a second.
 */
import { GatewayError, type ErrorCode } from '../protocol/errors.js';
import type { Timeouts } from '../protocol/config.js';
import type { ExchangeActivity } from './upstream-http.js';

export class Deadlines implements ExchangeActivity {
  readonly #abort: (reason: GatewayError) => void;
  readonly #timeouts: Timeouts;
  readonly #total: NodeJS.Timeout;
  #phase: NodeJS.Timeout | null;
  #held = false;

  /**
   * Starts the total and headers timers at once; `abort` ends the call with the expired deadline's error.
   * `budgetMs`, what is left of the whole request's time, shortens the total when it is the smaller.
   */
  constructor(abort: (reason: GatewayError) => void, timeouts: Timeouts, budgetMs = Infinity) {
    this.#abort = abort;
    this.#timeouts = timeouts;
    this.#total = setTimeout(() => this.#expire('upstream_timeout'), Math.max(0, Math.min(timeouts.totalMs, budgetMs)));
    this.#phase = setTimeout(() => this.#expire('upstream_headers_timeout'), timeouts.headersMs);
  }

  /** Headers arrived: from now on the idle limit applies between chunks. */
  headersArrived(): void {
    if (this.#phase) clearTimeout(this.#phase);
    this.#phase = setTimeout(() => this.#expire('upstream_idle_timeout'), this.#timeouts.idleMs);
  }

  /** A body chunk arrived. */
  chunkArrived(): void {
    // Not while held: refresh() starts a cleared timer again, and a chunk already on its way
    // when reading paused would then end the call while the client is still paused.
    if (!this.#held) this.#phase?.refresh();
  }

  /** The client paused the relay: silence is not the upstream's fault until it resumes. */
  hold(): void {
    this.#held = true;
    if (this.#phase) clearTimeout(this.#phase);
  }

  release(): void {
    this.#held = false;
    this.#phase?.refresh();
  }

  clear(): void {
    clearTimeout(this.#total);
    if (this.#phase) clearTimeout(this.#phase);
    this.#phase = null;
  }

  #expire(code: ErrorCode): void {
    this.clear();
    this.#abort(new GatewayError(code));
  }
}
