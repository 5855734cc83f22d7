/**
 * The golden files of this folder's tests (golden/*.json), read through the
 * providers' golden harness (workers/providers/golden.ts: `expectAt` checks
 * a file's expected side, and is the one place that may rewrite it, under
 * UPDATE_GOLDEN, to be read in the diff before it is committed), and what
 * the tests share: counting ids, SSE parsing, an Anthropic SDK client that
 * reads a canned answer.
 */
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { goldenFiles as providerGoldenFiles, writtenSse, type Golden } from '../../providers/golden.js';
import type { IdSource } from './ids.js';

const DIR = join(import.meta.dirname, 'golden');

/** Every golden file of this folder whose name starts with `prefix`. */
export const goldenFiles = <T>(prefix: string): Array<Golden<T>> => providerGoldenFiles<T>(DIR, prefix);

/** Ids that count from 1 across prefixes (`msg_1`, `toolu_2`, …), so golden files can name them. */
export function countingIds(): IdSource {
  let n = 0;
  return (prefix) => `${prefix}_${++n}`;
}

export interface SseEvent {
  readonly event: string | null;
  readonly data: Record<string, unknown>;
}

/** SSE text → its events, each as its name and parsed data (the data's keys in wire order): the providers' reader. */
export const parseSse = (text: string): SseEvent[] => writtenSse(text) as SseEvent[];

/** The official SDK, its every request answered by `answer` (no network): its parsers and error classes judge what the gateway writes. */
export function sdkAnswering(answer: () => Response): Anthropic {
  return new Anthropic({ apiKey: 'sk-test', baseURL: 'http://gateway.invalid', maxRetries: 0, fetch: async () => answer() });
}
