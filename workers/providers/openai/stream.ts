/**
 * The pass-through stream relay of an OpenAI-compatible upstream: a chunk
 * that is already whole canonical events goes on as it is (zero copy: the
 * chunk itself as a piece); any other is re-serialised. Every event's data
 * must be a JSON object (or `[DONE]`), checked by structure as large bodies
 * are (response-body.ts): parsing every chunk cost 1.9 µs an event, most of
 * what the worker did for a stream beyond undici. Only an event that may
 * carry usage is parsed.
 */
import type { Usage } from '../../../protocol/frames.js';
import { GatewayError } from '../../../protocol/errors.js';
import { usageOf, usageValueAt } from '../../response-body.js';
import { serializeEvents, type SseBatch } from '../../sse.js';
import { utf8Text } from '../../bytes.js';
import type { StreamRelay } from '../http-attempt.js';

const encoder = new TextEncoder();
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

export class PassThroughRelay implements StreamRelay {
  #usage: Usage | null = null;
  readonly #check = (data: string): void => {
    if (data === '[DONE]') return;
    if (!isJsonObjectShaped(data)) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not a JSON object');
    // Quotes inside a JSON string are escaped: an event whose text lacks `"usage"`, quotes included, has no usage key.
    if (data.includes('"usage"')) this.#usage = usageOfEvent(data) ?? this.#usage;
  };

  batch(batch: SseBatch): Uint8Array | readonly Uint8Array[] | null {
    if (batch.verbatim) {
      checkInPlace(batch.chunk, batch.bounds, this.#check);
      // The chunk as a piece: undici's read buffer is not ours to hand over (a thread hop copies it; in-thread it is only read).
      return [batch.chunk];
    }
    if (batch.events.length === 0) return null;
    for (const data of batch.events) this.#check(data);
    // Named events (a Responses API stream's) keep their names.
    return encoder.encode(serializeEvents(batch.events, batch.names));
  }

  end(rest: SseBatch): Uint8Array | readonly Uint8Array[] | null {
    return this.batch(rest);
  }

  usage(): Usage | null {
    return this.#usage;
  }
}

/**
 * The events of a verbatim chunk, checked on its bytes: one that is `{…}`
 * and has no usage passes undecoded; any other is decoded and given to
 * `check`. OpenAI's chunks carry `"usage":null` when the caller asked for
 * usage, all but the last: those are not parsed for it.
 */
function checkInPlace(chunk: Uint8Array, bounds: readonly number[], check: (data: string) => void): void {
  let key = usageValueAt(chunk, 0);
  for (let i = 0; i < bounds.length; i += 2) {
    const start = bounds[i] as number;
    const end = bounds[i + 1] as number;
    const carriesUsage = key !== -1 && key < end;
    if (carriesUsage || chunk[start] !== OPEN_BRACE || chunk[end - 1] !== CLOSE_BRACE) check(utf8Text(chunk, start, end));
    if (carriesUsage) key = usageValueAt(chunk, end);
  }
}

/** `{` … `}` around the data, JSON whitespace aside: what a truncated event or a text line is not. */
function isJsonObjectShaped(data: string): boolean {
  const text = data.charCodeAt(0) === OPEN_BRACE && data.charCodeAt(data.length - 1) === CLOSE_BRACE ? data : data.trim();
  return text.charCodeAt(0) === OPEN_BRACE && text.charCodeAt(text.length - 1) === CLOSE_BRACE;
}

function usageOfEvent(data: string): Usage | null {
  try {
    return usageOf(JSON.parse(data));
  } catch {
    throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not JSON');
  }
}
