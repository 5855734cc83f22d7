/**
 * `: keepalive` comments on open streams that carry no chunk for a while,
 * so load balancers with idle timeouts do not cut a long time-to-first-token
 * stream. One sweeping timer serves every stream.
 */
import { ChurnSet } from '../../protocol/churn-tables.js';

export interface KeptAlive {
  /** performance.now() of the last write. */
  lastWrite: number;
  writeComment(): void;
}

export class StreamKeepalive {
  readonly #streams = new ChurnSet<KeptAlive>();
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  add(stream: KeptAlive): void {
    this.#streams.add(stream);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#sweep(), Math.max(10, Math.min(1000, this.#intervalMs / 4)));
      this.#timer.unref();
    }
  }

  delete(stream: KeptAlive): void {
    this.#streams.delete(stream);
    if (this.#streams.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  get size(): number {
    return this.#streams.size;
  }

  #sweep(): void {
    const due = performance.now() - this.#intervalMs;
    for (const stream of this.#streams.values()) if (stream.lastWrite <= due) stream.writeComment();
  }
}
