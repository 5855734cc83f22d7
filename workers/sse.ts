/**
 * Incremental Server-Sent Events parser for provider streams. It yields the
 * `data` of each complete event and refuses what is not SSE: a line that is
 * no field (no `data:` prefix), or an event that grows past the limit
 * without ending.
 */
import { GatewayError } from '../src/errors.js';

const FIELDS = new Set(['data', 'event', 'id', 'retry']);

export class SseParser {
  readonly #decoder = new TextDecoder('utf-8');
  readonly #maxEventChars: number;
  #buffer = '';
  /** A trailing `\r` held back: the `\n` of a CRLF may arrive in the next chunk. */
  #heldCr = false;

  constructor(maxEventBytes: number) {
    this.#maxEventChars = maxEventBytes;
  }

  /** Feeds bytes; returns the data of every event completed by them (`[DONE]` included). */
  push(chunk: Uint8Array): string[] {
    let text = this.#decoder.decode(chunk, { stream: true });
    if (this.#heldCr) text = `\r${text}`;
    this.#heldCr = text.endsWith('\r');
    if (this.#heldCr) text = text.slice(0, -1);
    this.#buffer += text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
    const events: string[] = [];
    let boundary: number;
    while ((boundary = this.#buffer.indexOf('\n\n')) !== -1) {
      const raw = this.#buffer.slice(0, boundary);
      this.#buffer = this.#buffer.slice(boundary + 2);
      const data = parseEvent(raw);
      if (data !== null) events.push(data);
    }
    if (this.#buffer.length > this.#maxEventChars) {
      throw new GatewayError('upstream_response_too_large', 'a provider stream event exceeds the configured limit');
    }
    return events;
  }

  /** Whatever is left when the upstream ends; a last event without its blank line is still an event. */
  finish(): string[] {
    const rest = (this.#buffer + this.#decoder.decode()).trim();
    this.#buffer = '';
    if (rest.length === 0) return [];
    const data = parseEvent(rest);
    return data === null ? [] : [data];
  }
}

/** The joined `data` lines of one event, or null for an event with none (comments, keep-alives). */
function parseEvent(raw: string): string | null {
  let data: string | null = null;
  for (const line of raw.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    if (!FIELDS.has(field)) {
      throw new GatewayError('upstream_invalid_response', 'the provider stream has a line that is not a server-sent event field');
    }
    if (field !== 'data') continue;
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    data = data === null ? value : `${data}\n${value}`;
  }
  return data;
}
