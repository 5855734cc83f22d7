/** Reads the golden files of this folder's tests (golden/*.json): recorded-style inputs and OpenAI's wire format out. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writtenSse } from '../../providers/golden.js';
import type { IdSource, Json } from './response.js';

const DIR = join(import.meta.dirname, 'golden');

/** Every golden file whose name starts with `prefix`, parsed, by name. */
export function goldenFiles<T>(prefix: string): Array<[string, T]> {
  return readdirSync(DIR)
    .filter((name) => name.startsWith(prefix) && name.endsWith('.json'))
    .map((name) => [name, JSON.parse(readFileSync(join(DIR, name), 'utf8')) as T]);
}

/** Ids that count from 1 across prefixes (`resp_1`, `msg_2`, …), so golden files can name them. */
export function countingIds(): IdSource {
  let n = 0;
  return (prefix) => `${prefix}_${++n}`;
}

/** SSE text → its events, each as its name and parsed data (the data's keys in wire order): the providers' reader. */
export const parseSse = (text: string): Array<{ event: string | null; data: Json }> => writtenSse(text) as Array<{ event: string | null; data: Json }>;
