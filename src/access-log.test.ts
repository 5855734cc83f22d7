import { mkdtempSync, openSync, closeSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AccessLog, type AccessEntry } from './access-log.js';
import { BatchedStdout, createLogger, isoTime } from './logging.js';

/** A logger whose lines land in an array. */
function capture(level = 'info') {
  const lines: string[] = [];
  return { log: createLogger(level, { write: (line: string) => void lines.push(line) }), lines };
}

const entry = (over: Partial<AccessEntry> = {}): AccessEntry => ({
  requestId: 'req-1',
  method: 'POST',
  route: '/v1/chat/completions',
  model: 'gpt-x',
  provider: 'openai',
  status: 200,
  stream: false,
  durationMs: 1.23456,
  upstreamMs: 0.98765,
  ttftMs: null,
  bytesIn: 120,
  bytesOut: 456,
  deployment: 'gpt-x-0',
  attempts: 1,
  fallback: null,
  backoff: null,
  ...over,
});

/** The line pino itself writes for the same fields: the format the hand-written one must keep. */
function pinoLine(e: AccessEntry): string {
  let out = '';
  const log = pino({ level: 'info', base: { service: 'switchyard' }, timestamp: isoTime }, { write: (s: string) => void (out = s) });
  const r = (ms: number) => Math.round(ms * 100) / 100;
  log.info(
    {
      event: 'access',
      request_id: e.requestId,
      method: e.method,
      route: e.route,
      model: e.model,
      provider: e.provider,
      status: e.status,
      stream: e.stream,
      duration_ms: r(e.durationMs),
      upstream_ms: r(e.upstreamMs),
      ttft_ms: e.ttftMs === null ? undefined : r(e.ttftMs),
      bytes_in: e.bytesIn,
      bytes_out: e.bytesOut,
      deployment: e.deployment,
      attempts: e.attempts,
      fallback: e.fallback,
      backoff_ms: e.backoff === null ? undefined : r(e.backoff.ms),
      backoff_reason: e.backoff?.reason,
    },
    'request',
  );
  return out;
}

const withoutTime = (line: string) => line.replace(/"time":"[^"]*"/, '"time":"T"');

describe('AccessLog', () => {
  it('writes the line pino writes for the same fields, byte for byte (but the time)', () => {
    const { log, lines } = capture();
    const access = new AccessLog(log);
    for (const e of [
      entry(),
      entry({ stream: true, ttftMs: 0.5, status: 499, model: 'unrouted', provider: 'none', deployment: null, attempts: 0 }),
      entry({ ttftMs: 0, deployment: 'east "1"', attempts: 3, fallback: 'chat-backup' }),
      entry({ deployment: 'solo', attempts: 2, backoff: { ms: 1003.456, reason: '429 Retry-After from solo' } }),
      entry({ backoff: { ms: 250, reason: 'router_settings.retry_after' } }),
    ]) {
      access.write(e);
      expect(withoutTime(lines.at(-1) as string)).toBe(withoutTime(pinoLine(e)));
    }
  });

  it('any model name or request id, control characters, quotes and lone surrogates included, reads back exactly, fields in pino order', () => {
    const { log, lines } = capture();
    const access = new AccessLog(log);
    const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.string({ unit: anyUnit }), fc.string({ unit: anyUnit }), fc.double({ min: 0, max: 1e6, noNaN: true }), (model, requestId, ms) => {
        access.write(entry({ model, requestId, durationMs: ms }));
        const line = lines.at(-1) as string;
        expect(line.endsWith('}\n')).toBe(true);
        expect(line.indexOf('\n')).toBe(line.length - 1);
        const parsed = JSON.parse(line) as Record<string, unknown>;
        expect(parsed.model).toBe(model);
        expect(parsed.request_id).toBe(requestId);
        expect(parsed.duration_ms).toBe(Math.round(ms * 100) / 100);
        expect(Object.keys(parsed)).toEqual(Object.keys(JSON.parse(pinoLine(entry())) as object));
      }),
      { seed: 20261123, numRuns: 500 },
    );
  });

  it('writes nothing when the level leaves info out', () => {
    const { log, lines } = capture('warn');
    new AccessLog(log).write(entry());
    expect(lines).toHaveLength(0);
  });
});

describe('BatchedStdout', () => {
  it('every line reaches the file descriptor whole and in order: many-byte characters, batches and a line larger than a batch', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'switchyard-log-')), 'out.log');
    const fd = openSync(file, 'w');
    const out = new BatchedStdout(fd);
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) lines.push(`{"n":${i},"s":"${'é😀x'.repeat(i % 40)}"}\n`);
    lines.splice(1500, 0, `{"big":"${'ü'.repeat(200_000)}"}\n`);
    for (const line of lines) out.write(line);
    await new Promise<void>((resolve, reject) => out.flush((err) => (err ? reject(err) : resolve())));
    // flush answers once sonic-boom has nothing queued; the last write may still be in flight.
    await expect.poll(() => readFileSync(file, 'utf8').length, { timeout: 1000, interval: 5 }).toBe(lines.join('').length);
    expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
    closeSync(fd);
  });

  it('a quiet gateway still shows its line within the flush interval', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'switchyard-log-')), 'out.log');
    const fd = openSync(file, 'w');
    const written = performance.now();
    new BatchedStdout(fd).write('{"one":"line"}\n');
    expect(readFileSync(file, 'utf8')).toBe('');
    // Within the flush interval (src/logging.ts: 200 ms), and a margin for a loaded host (test/support/waits.ts's MARGIN_MS).
    await expect.poll(() => readFileSync(file, 'utf8'), { timeout: 200 + 500, interval: 5 }).toBe('{"one":"line"}\n');
    expect(performance.now() - written).toBeLessThan(200 + 500);
    closeSync(fd);
  });
});
