/**
 * The stream relay of a translating adapter (anthropic, bedrock): each
 * parsed batch through the provider's pure translator, its output as one
 * frame. An in-band error event ends the translation; the events before it
 * in the batch are still handed on, then failure() has it (http-attempt.ts
 * ends the attempt with it), so the client keeps what came first.
 */
import type { Usage } from '../../protocol/frames.js';
import type { StreamRelay } from './http-attempt.js';

const encoder = new TextEncoder();

/** A provider's stream translator as the relay drives it. */
export interface StreamTranslation<B> {
  /** Appends the SSE text of each unit of `batch` to `out.text`, in order; throws the attempt's failure at an error event. */
  translate(batch: B, out: { text: string }): void;
  /** The upstream ended: the SSE text left to send; throws when the stream was cut short. */
  end(): string;
  /** The usage the stream reported so far. */
  usage(): Usage | null;
}

export class TranslatingRelay<B> implements StreamRelay<B> {
  readonly #translation: StreamTranslation<B>;
  readonly #out = { text: '' };
  #failure: unknown = null;

  constructor(translation: StreamTranslation<B>) {
    this.#translation = translation;
  }

  batch(batch: B): Uint8Array | null {
    return this.#run(batch, false);
  }

  /** The last events, then the translator's end: a stream cut short is a failure too, reported the same way. */
  end(rest: B): Uint8Array | null {
    return this.#run(rest, true);
  }

  #run(batch: B, last: boolean): Uint8Array | null {
    if (this.#failure !== null) throw this.#failure;
    const out = this.#out;
    out.text = '';
    try {
      this.#translation.translate(batch, out);
      if (last) out.text += this.#translation.end();
    } catch (err) {
      this.#failure = err;
    }
    return out.text.length === 0 ? null : encoder.encode(out.text);
  }

  failure(): unknown {
    return this.#failure;
  }

  usage(): Usage | null {
    return this.#translation.usage();
  }
}
