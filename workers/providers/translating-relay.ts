/**
 * The stream relay of every provider whose events are translated one by
 * one into compatible chunks (anthropic, gemini): each batch's events go
 * through the provider's translator, its output as one frame. An event the
 * translator refuses (an in-band error event, a stream cut short) ends the
 * translation; the events before it in the batch are still handed on, and
 * failure() then reports it, so the commit gate sees the content first.
 */
import type { Usage } from '../../protocol/frames.js';
import { decodedEvents, type SseBatch } from '../sse.js';
import type { StreamRelay } from './http-attempt.js';

const encoder = new TextEncoder();

/** A provider's pure stream translator: events in, SSE text out. */
export interface StreamTranslator {
  /** One event (its `event:` name, null when it had none, and its data): the SSE text to send, '' for none; throws the attempt's failure. */
  event(name: string | null, data: string): string;
  /** The upstream ended: what is left to send; throws when the stream was cut short. */
  end(): string;
  /** The usage counted so far (complete once the stream ended). */
  readonly usage: Usage | null;
  /**
   * Whether what event() and end() returned so far carries content as the commit gate judges it
   * (routing/commit-gate.ts: text, a tool call, a finish reason, or [DONE]; a role chunk, an empty
   * delta or a usage chunk does not). The translator made every event, and throws where the
   * provider sent an error, so the gate takes this instead of reading the events again.
   */
  readonly contentSent: boolean;
}

/**
 * contentSent for a translator whose first write is its role chunk, alone (CONTRACT.md, Streams:
 * one role chunk, the first), and every later write carries content (a text, a tool call, a
 * finish reason, [DONE]): it counts the writes that `written` passes through.
 */
export class RoleChunkFirst {
  #writes = 0;

  get contentSent(): boolean {
    return this.#writes > 1;
  }

  written(out: string): string {
    if (out.length > 0) this.#writes++;
    return out;
  }
}

export class TranslatingRelay implements StreamRelay {
  readonly #translator: StreamTranslator;
  #failure: unknown = null;

  constructor(translator: StreamTranslator) {
    this.#translator = translator;
  }

  batch(batch: SseBatch): Uint8Array | null {
    if (this.#failure !== null) throw this.#failure;
    const { events, names } = decodedEvents(batch);
    let out = '';
    try {
      for (let i = 0; i < events.length; i++) out += this.#translator.event(names?.[i] ?? null, events[i] as string);
    } catch (err) {
      this.#failure = err;
    }
    return out.length === 0 ? null : encoder.encode(out);
  }

  end(rest: SseBatch): Uint8Array | null {
    const last = this.batch(rest);
    if (this.#failure !== null) return last;
    let tail = '';
    try {
      tail = this.#translator.end();
    } catch (err) {
      this.#failure = err;
    }
    if (tail.length === 0) return last;
    const bytes = encoder.encode(tail);
    return last === null ? bytes : Buffer.concat([last, bytes]);
  }

  failure(): unknown {
    return this.#failure;
  }

  contentSent(): boolean {
    return this.#translator.contentSent;
  }

  usage(): Usage | null {
    return this.#translator.usage;
  }
}
