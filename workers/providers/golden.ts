/**
 * The golden files of the translator tests (workers/providers/<name>/golden/*.json):
 * a provider's recorded-style request, answer or stream in, the compatible
 * form out, as Envoy AI Gateway tests its translators.
 *
 * Two kinds of file (issue 34):
 * - a file with a `source` field is anchored outside the translator: its
 *   input is copied from the provider SDK's own test fixtures, a recording
 *   of the real service or the provider's documented examples (the field
 *   says which, at which commit and line), and its expected side was
 *   written by hand from CONTRACT.md. It is never rewritten: a translator
 *   that disagrees with it is the bug;
 * - any other file was written with the translator's help, and
 *   `UPDATE_GOLDEN=1` rewrites its expected side when the translator gives
 *   something else. Such a run is a tool, never a pass: each file it
 *   rewrites fails its test ("rewritten; review the diff and run again
 *   without UPDATE_GOLDEN"), and under `CI=true` the mode is refused.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { createParser } from 'eventsource-parser';
import { expect, it } from 'vitest';
import { GatewayError } from '../../protocol/errors.js';
import { carriesContent } from '../routing/commit-gate.js';
import { decodedEvents, SseParser } from '../sse.js';
import type { StreamTranslator } from './translating-relay.js';

export interface Golden<T> {
  readonly name: string;
  readonly case: T;
  /** Where the input was copied from, for a file anchored outside the translator (never rewritten); else null. */
  readonly source: string | null;
  /**
   * Checks `actual` against the file's `key`. Under UPDATE_GOLDEN a file without a `source` gets
   * `actual` written there when it differs, and the check fails all the same.
   */
  expectAt(key: keyof T & string, actual: unknown): void;
}

/** The environment the golden files read their mode from (process.env, or a test's). */
export type GoldenEnv = Readonly<Record<string, string | undefined>>;

/** Whether the run rewrites golden files; UPDATE_GOLDEN under CI is refused (thrown). */
export function goldenUpdateMode(env: GoldenEnv = process.env): boolean {
  if (env.UPDATE_GOLDEN !== '1') return false;
  if (env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0') {
    throw new Error('UPDATE_GOLDEN=1 is refused under CI: golden files are checked in CI, never written (run it locally and commit the reviewed diff)');
  }
  return true;
}

/** Every golden file of `dir` whose name starts with `prefix`. */
export function goldenFiles<T>(dir: string, prefix: string, env: GoldenEnv = process.env): Array<Golden<T>> {
  const update = goldenUpdateMode(env);
  return readdirSync(dir)
    .filter((name) => name.startsWith(prefix) && name.endsWith('.json'))
    .sort()
    .map((name) => {
      const path = join(dir, name);
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as T & { source?: unknown };
      const source = typeof parsed.source === 'string' ? parsed.source : null;
      return {
        name,
        case: parsed,
        source,
        expectAt(key, actual) {
          const plain = JSON.parse(JSON.stringify(actual)) as unknown;
          const expected = (parsed as Record<string, unknown>)[key];
          if (update && source === null && !isDeepStrictEqual(plain, expected)) {
            const current = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
            current[key] = plain;
            writeFileSync(path, `${JSON.stringify(current, null, 2)}\n`);
            throw new Error(`${name}: "${key}" rewritten; review the diff and run again without UPDATE_GOLDEN`);
          }
          expect(plain, `${name}: "${key}"${source === null ? '' : ' (anchored outside the translator: never rewritten)'}`).toEqual(expected);
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
  events: ReadonlyArray<RecordedEvent | { readonly event?: string; readonly data: unknown }>,
  describe: (err: unknown) => unknown,
): { chunks: unknown[]; failure: unknown } {
  let sse = '';
  try {
    for (const e of events) sse = judged(translator, sse + translator.event(e.event ?? null, 'raw' in e ? e.raw : JSON.stringify(e.data)));
    sse = judged(translator, sse + translator.end());
  } catch (err) {
    return { chunks: sseData(sse), failure: describe(err) };
  }
  return { chunks: sseData(sse), failure: null };
}

/** One event of a recorded stream as the provider's parser hands it on: its name, and its data as sent. */
export interface RecordedEvent {
  readonly event?: string;
  readonly raw: string;
}

/**
 * A provider's SSE text, copied as it was recorded, as the gateway's SSE parser (workers/sse.ts)
 * hands it to a translator: each event's `event:` name and its data, byte for byte.
 */
export function recordedSse(text: string): RecordedEvent[] {
  const parser = new SseParser(1 << 24);
  const out: RecordedEvent[] = [];
  for (const batch of [parser.push(encoder.encode(text)), parser.finish()]) {
    const { events, names } = decodedEvents(batch);
    events.forEach((raw, i) => {
      const event = names?.[i];
      out.push(event === null || event === undefined ? { raw } : { event, raw });
    });
  }
  return out;
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

/**
 * SSE text a translator wrote, as a client reads it: each event's `event:` name (null without one)
 * and its data parsed (`[DONE]` kept as the string). Read with eventsource-parser, which shares no
 * code with the gateway's own parser (as test/support/sse.ts, which workers/ cannot import: the
 * build compiles this file without test/), and strictly: a line that is no field, a comment, or
 * text that ends inside an event fails the test, where a reader would drop it.
 */
export function writtenSse(text: string): Array<{ event: string | null; data: unknown }> {
  const events: Array<{ event: string | null; data: unknown }> = [];
  const problems: string[] = [];
  let ended = false;
  const parser = createParser({
    onEvent: ({ event, data }) => {
      if (ended) problems.push(`the text ends inside an event: ${data.slice(0, 200)}`);
      else events.push({ event: event ?? null, data: data === '[DONE]' ? data : (JSON.parse(data) as unknown) });
    },
    onComment: (comment) => problems.push(`a comment: ${comment}`),
    onError: (error) => problems.push(`not an SSE line: ${error.line ?? error.message}`),
  });
  parser.feed(text);
  ended = true;
  parser.feed('\n\n');
  if (problems.length > 0) throw new Error(`${problems.join('; ')} in ${JSON.stringify(text.slice(0, 500))}`);
  return events;
}

/** SSE text as the data of each event, parsed (`[DONE]` kept as the string). */
export function sseData(text: string): unknown[] {
  return writtenSse(text).map((e) => e.data);
}
