/**
 * Stopping one provider call: the client left (the front sent `cancel`) or
 * one of its deadlines passed. A plain field and one listener, because an
 * AbortController and an event listener on its signal cost more per call
 * than the stop itself; an AbortSignal is made only for an API that needs
 * one (the mock provider's timers).
 */
export class CallControl {
  #aborted = false;
  #reason: unknown = undefined;
  #listener: ((reason: unknown) => void) | null = null;
  #controller: AbortController | null = null;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Why the call was stopped: a GatewayError for a deadline, CANCELLED for a client that left. */
  get reason(): unknown {
    return this.#reason;
  }

  /** The one function to call when stopped (at once if already stopped); replaces any earlier one. */
  onAbort(listener: ((reason: unknown) => void) | null): void {
    this.#listener = listener;
    if (listener && this.#aborted) listener(this.#reason);
  }

  /** Fires together with `onAbort`. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Stops the call; later calls change nothing. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#listener?.(reason);
    this.#controller?.abort(reason);
  }
}
