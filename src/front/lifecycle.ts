/**
 * The front's lifecycle during a graceful drain (issue 4):
 *
 *   serving ──SIGTERM──▶ draining ──drain delay──▶ closing ──done or drain timeout──▶ closed
 *
 * `draining`: /ready answers 503 at once so load balancers stop sending;
 * everything else is still served. `closing`: the listen socket is closed;
 * a request arriving on a kept-alive connection gets 503 `shutting_down`
 * and the connection is closed. At the drain timeout every request still
 * open is interrupted: a stream ends with an SSE error event, a pending
 * answer becomes a 503.
 */
import { ChurnSet } from '../../protocol/churn-tables.js';

export type Phase = 'serving' | 'draining' | 'closing' | 'closed';

/** A request in flight that can be ended early with `shutting_down`. */
export interface Interruptible {
  interrupt(): void;
}

export class Lifecycle {
  phase: Phase = 'serving';
  readonly active = new ChurnSet<Interruptible>();
  #idle: Array<() => void> = [];

  get accepting(): boolean {
    return this.phase === 'serving' || this.phase === 'draining';
  }

  add(call: Interruptible): void {
    this.active.add(call);
  }

  delete(call: Interruptible): void {
    this.active.delete(call);
    if (this.active.size === 0 && this.#idle.length > 0) {
      const waiters = this.#idle;
      this.#idle = [];
      for (const resolve of waiters) resolve();
    }
  }

  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void> {
    if (this.active.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Ends every request still in flight with `shutting_down`. */
  interruptAll(): number {
    const calls = this.active.values();
    for (const call of calls) call.interrupt();
    return calls.length;
  }
}
