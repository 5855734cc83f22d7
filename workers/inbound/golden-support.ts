/**
 * What the inbound formats' golden-file tests share (workers/inbound/<format>/golden.ts): ids that
 * count, so a golden file can name them, and the strict reader of the SSE the translators write
 * (the providers' goldens' `writtenSse`: a line that is no field, a comment, or text that ends
 * inside an event fails the test).
 */
import { writtenSse } from '../providers/golden.js';

/** Ids that count from 1 across prefixes (`resp_1`, `msg_2`, `toolu_3`, …). */
export function countingIds(): (prefix: string) => string {
  let n = 0;
  return (prefix) => `${prefix}_${++n}`;
}

export interface SseEvent {
  readonly event: string | null;
  readonly data: Record<string, unknown>;
}

/** SSE text → its events, each as its name and parsed data (the data's keys in wire order). */
export const parseSse = (text: string): SseEvent[] => writtenSse(text) as SseEvent[];
