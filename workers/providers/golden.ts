/**
 * The golden files of the translator tests (workers/providers/<name>/golden/*.json):
 * a provider's recorded-style request, answer or stream in, the compatible
 * form out, as Envoy AI Gateway tests its translators. `UPDATE_GOLDEN=1`
 * writes what the translator gives now into each file's expected side, to
 * be read in the diff before it is committed.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

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
