/** Reads the golden files of this folder's tests (golden/*.json): recorded-style inputs and OpenAI's wire format out. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const DIR = join(import.meta.dirname, 'golden');

/** Every golden file whose name starts with `prefix`, parsed, by name. */
export function goldenFiles<T>(prefix: string): Array<[string, T]> {
  return readdirSync(DIR)
    .filter((name) => name.startsWith(prefix) && name.endsWith('.json'))
    .map((name) => [name, JSON.parse(readFileSync(join(DIR, name), 'utf8')) as T]);
}

export { countingIds, parseSse } from '../golden-support.js';
