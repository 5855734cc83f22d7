/**
 * The golden files of the translator tests (workers/providers/<name>/golden/*.json):
 * a provider's recorded-style request, answer or stream in, the compatible
 * form out, as Envoy AI Gateway tests its translators. `UPDATE_GOLDEN=1`
 * writes what the translator gives now into each file's expected side, to
 * be read in the diff before it is committed.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { GatewayError } from '../../protocol/errors.js';
import { carriesContent } from '../routing/commit-gate.js';
import type { StreamTranslator } from './translating-relay.js';

export interface Golden<T> {
  readonly name: string;
  readonly case: T;
  /** Checks `actual` against the file's `key`, or writes it there under UPDATE_GOLDEN. */
  expectAt(key: keyof T & string, actual: unknown): void;
}

/** Every golden file of `dir` whose name starts with `prefix`. */
export function goldenFiles<T>(dir: string, prefix: string): Array<Golden<T>> {
  return readdirSync(dir)
    .filter((name) => name.startsWith(prefix) && name.endsWith('.json'))
    .sort()
    .map((name) => {
      const path = join(dir, name);
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as T;
      return {
        name,
        case: parsed,
        expectAt(key, actual) {
          const plain = JSON.parse(JSON.stringify(actual)) as unknown;
          if (process.env.UPDATE_GOLDEN === '1') {
            const current = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
            current[key] = plain;
            writeFileSync(path, `${JSON.stringify(current, null, 2)}\n`);
            return;
          }
          expect(plain).toEqual((parsed as Record<string, unknown>)[key]);
        },
      };
    });
}

/**
 * One test per request golden file of `dir` (`request-*.json`): the file's
 * `chat` body translated with its `options` is its `key`, and the body is
 * left as it was (it is the attempt loop's, shared by every attempt).
 */
export function requestGoldens<O>(dir: string, key: string, translate: (chat: Record<string, unknown>, options: O) => unknown): void {
  for (const golden of goldenFiles<{ about: string; options: O; chat: Record<string, unknown> }>(dir, 'request-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const before = JSON.stringify(golden.case.chat);
      golden.expectAt(key as never, translate(golden.case.chat, golden.case.options));
      expect(JSON.stringify(golden.case.chat)).toBe(before);
    });
  }
}

/**
 * Feeds a stream translator the events one by one, then its end: the chunks
 * it sent until the end or its failure, and the failure as `describe` puts
 * it for the golden file (null when there was none).
 */
export function translatedStream(
  translator: StreamTranslator,
  events: ReadonlyArray<{ readonly event?: string; readonly data: unknown }>,
  describe: (err: unknown) => unknown,
): { chunks: unknown[]; failure: unknown } {
  let sse = '';
  try {
    for (const { event, data } of events) sse = judged(translator, sse + translator.event(event ?? null, JSON.stringify(data)));
    sse = judged(translator, sse + translator.end());
  } catch (err) {
    return { chunks: sseData(sse), failure: describe(err) };
  }
  return { chunks: sseData(sse), failure: null };
}

/**
 * `sse`, once the translator's word on it (contentSent) is checked against the commit gate's own
 * reading of the same events: the gate takes the word instead of reading them.
 */
export function judged(translator: StreamTranslator, sse: string): string {
  expect(translator.contentSent, `contentSent after: ${sse}`).toBe(carriesContent(encoder.encode(sse)));
  return sse;
}

const encoder = new TextEncoder();

/** The GatewayError a request translation throws for `body` (the test fails when it throws none). */
export function refusalOf(translate: (body: Record<string, unknown>) => unknown, body: Record<string, unknown>): GatewayError {
  try {
    translate(body);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('not refused');
}

/** A 400 `unsupported_parameter` naming `param` first and telling of drop_params. */
export function expectUnsupported(err: GatewayError, param: string): void {
  expect(err.code).toBe('unsupported_parameter');
  expect(err.message.startsWith(`${param}:`)).toBe(true);
  expect(err.message).toContain('drop_params');
}

/** A recorded stream as SSE text: `{event, data}` items, each data serialised as the provider writes it. */
export function sseText(events: ReadonlyArray<{ readonly event?: string; readonly data: unknown }>): string {
  return events.map((e) => `${e.event === undefined ? '' : `event: ${e.event}\n`}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('');
}

/** SSE text as the data of each event, parsed (`[DONE]` kept as the string). */
export function sseData(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      return data === '[DONE]' ? data : (JSON.parse(data) as unknown);
    });
}
