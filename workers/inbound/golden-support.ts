/**
 * What the inbound formats' golden-file tests share (workers/inbound/<format>/golden.ts): ids that
 * count, so a golden file can name them, and a strict reader of the SSE the translators write.
 */

/** Ids that count from 1 across prefixes (`resp_1`, `msg_2`, `toolu_3`, …). */
export function countingIds(): (prefix: string) => string {
  let n = 0;
  return (prefix) => `${prefix}_${++n}`;
}

export interface SseEvent {
  readonly event: string | null;
  readonly data: Record<string, unknown>;
}

/**
 * SSE text → its events, each as its name and parsed data (the data's keys in wire order). Strict:
 * a translator writes `event:` and `data:` lines only, so any other line is a defect it reports.
 */
export function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
        else throw new Error(`not an SSE line: ${line}`);
      }
      return { event, data: JSON.parse(data.join('\n')) as Record<string, unknown> };
    });
}
