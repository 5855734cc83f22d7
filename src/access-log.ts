/**
 * The access log: one line per provider request, in the format of every
 * other log line (pino's JSON: level, time, service, the fields, msg), but
 * written by hand. pino builds a line by walking the object and appending
 * to a string field by field: about 2.7 KB of garbage and a few µs a
 * request, the largest single allocation of the hot path. The fields of an
 * access line are fixed, so one template writes it.
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import type { Backoff } from '../protocol/frames.js';
import { isoTime } from './logging.js';

/** What an access line says (docs/OPERATIONS.md, "Logs"). */
export interface AccessEntry {
  readonly requestId: string;
  readonly method: string;
  readonly route: string;
  readonly model: string;
  readonly provider: string;
  readonly status: number;
  readonly stream: boolean;
  readonly durationMs: number;
  readonly upstreamMs: number;
  /** Streams only: when the first data event was written; null when none was. */
  readonly ttftMs: number | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** The deployment that served (or was tried last); null when none was tried. */
  readonly deployment: string | null;
  /** Attempts made, the last included. */
  readonly attempts: number;
  /** The fallback group that served; null when the requested group did. */
  readonly fallback: string | null;
  /** The waits before attempts (a provider's Retry-After, router_settings.retry_after); null when there was none. */
  readonly backoff: Backoff | null;
}

const INFO = 30;
const PREFIX = `{"level":${INFO}`;
const SERVICE = `,"service":"switchyard","event":"access","request_id":`;

export class AccessLog {
  readonly #stream: DestinationStream | null;

  /** Writes to `log`'s stream, at info: nothing when `log`'s level leaves info out. */
  constructor(log: Logger) {
    this.#stream = log.isLevelEnabled('info') ? ((log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym] as DestinationStream) : null;
  }

  write(e: AccessEntry): void {
    if (this.#stream === null) return;
    const ttft = e.ttftMs === null ? '' : `,"ttft_ms":${round(e.ttftMs)}`;
    const backoff = e.backoff === null ? '' : `,"backoff_ms":${round(e.backoff.ms)},"backoff_reason":${str(e.backoff.reason)}`;
    this.#stream.write(
      `${PREFIX}${isoTime()}${SERVICE}${str(e.requestId)},"method":${str(e.method)},"route":${str(e.route)},"model":${str(e.model)},"provider":${str(e.provider)},"status":${e.status},"stream":${e.stream},"duration_ms":${round(e.durationMs)},"upstream_ms":${round(e.upstreamMs)}${ttft},"bytes_in":${e.bytesIn},"bytes_out":${e.bytesOut},"deployment":${nullable(e.deployment)},"attempts":${e.attempts},"fallback":${nullable(e.fallback)}${backoff},"msg":"request"}\n`,
    );
  }
}

/** Printable ASCII but `"` and `\`: what a JSON string holds as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A JSON string; model names and request ids come from clients, so anything else is escaped by JSON.stringify. */
function str(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}

const nullable = (s: string | null): string => (s === null ? 'null' : str(s));

/** Milliseconds to two decimals; a JSON number (never NaN or Infinity, which JSON has not). */
function round(ms: number): number {
  return Number.isFinite(ms) ? Math.round(ms * 100) / 100 : 0;
}
