/**
 * Backpressure for one call: the front pauses a stream when its client's
 * socket is full and resumes it when the socket drains; the adapter stops
 * reading its upstream in between, so a slow client slows its upstream
 * instead of growing a buffer.
 */
export class Flow {
  #paused = false;
  #listeners: Array<(paused: boolean) => void> = [];

  get paused(): boolean {
    return this.#paused;
  }

  pause(): void {
    this.#set(true);
  }

  resume(): void {
    this.#set(false);
  }

  /** Calls `listener` on every change; returns the unsubscribe function. */
  onChange(listener: (paused: boolean) => void): () => void {
    this.#listeners.push(listener);
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  /** Resolves at once when running, else when resumed. */
  whenRunning(): Promise<void> {
    if (!this.#paused) return Promise.resolve();
    return new Promise((resolve) => {
      const off = this.onChange((paused) => {
        if (!paused) {
          off();
          resolve();
        }
      });
    });
  }

  #set(paused: boolean): void {
    if (this.#paused === paused) return;
    this.#paused = paused;
    for (const listener of this.#listeners) listener(paused);
  }
}
