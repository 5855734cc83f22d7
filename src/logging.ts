/**
 * pino, configured once. Secrets are redacted by path wherever they could
 * appear; access lines carry no body and no header values but the request id.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'api_key',
  '*.api_key',
  'apiKey',
  '*.apiKey',
  // A route's key (protocol/config.ts, Credentials), should a route or upstream ever be logged.
  'credentials.key',
  '*.credentials.key',
  'apiKeys',
];

/** How often buffered log lines are flushed at the latest. */
const FLUSH_INTERVAL_MS = 200;
/** Lines are handed to sonic-boom once this many bytes are encoded. */
const BATCH_BYTES = 32 * 1024;
/** Room for a batch plus the line that fills it (a UTF-16 unit is at most 3 UTF-8 bytes). */
const SLAB_BYTES = 2 * BATCH_BYTES;

/** sonic-boom in buffer mode. */
interface BufferDestination {
  write(data: Buffer): boolean;
  flush(cb?: (err?: Error | null) => void): void;
  flushSync(): void;
}

/**
 * Lines encoded into a buffer as they are written and handed to sonic-boom
 * (which owns the asynchronous writes, EAGAIN on pipes and the final
 * synchronous flush) in 32 KiB batches, flushed at least every 200 ms so a
 * quiet gateway still shows its lines at once.
 *
 * Why encode per line: a batch kept as strings and joined at hand-over cost
 * about 160 µs at once every hundred requests (the join flattens a hundred
 * concatenated strings; sonic-boom's string mode then measures and encodes
 * the batch twice). That pause landed on one request in a hundred, right at
 * the p99 of chat at concurrency 1. Encoding each line as it comes costs
 * the same in total, spread evenly. sonic-boom's own `minLength` buffering
 * measures its whole buffer on every line and costs more still.
 */
export class BatchedStdout implements DestinationStream {
  readonly #dest: BufferDestination;
  #slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  #used = 0;

  constructor(fd = 1) {
    // contentMode 'buffer' makes sonic-boom take Buffers; its types know only strings.
    this.#dest = pino.destination({ dest: fd, sync: false, contentMode: 'buffer', maxWrite: SLAB_BYTES }) as unknown as BufferDestination;
    setInterval(() => this.#handOver(), FLUSH_INTERVAL_MS).unref();
  }

  write(line: string): void {
    if (line.length * 3 > SLAB_BYTES - this.#used) {
      this.#handOver();
      if (line.length * 3 > SLAB_BYTES) {
        this.#dest.write(Buffer.from(line, 'utf8'));
        return;
      }
    }
    this.#used += this.#slab.write(line, this.#used, 'utf8');
    if (this.#used >= BATCH_BYTES) this.#handOver();
  }

  /** pino's `logger.flush(cb)`: everything written out, then `cb`. */
  flush(cb?: (err?: Error | null) => void): void {
    this.#handOver();
    this.#dest.flush(cb);
  }

  /** pino's exit path. */
  flushSync(): void {
    this.#handOver();
    this.#dest.flushSync();
  }

  /** The encoded lines go to sonic-boom, which keeps the buffer until written: the next lines get a new one. */
  #handOver(): void {
    if (this.#used === 0) return;
    this.#dest.write(this.#slab.subarray(0, this.#used));
    this.#slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    this.#used = 0;
  }
}

let lastMs = 0;
let lastTime = '';

/**
 * pino's `isoTime`, made once per millisecond: a busy gateway writes
 * several lines in the same millisecond, and formatting a Date is a third
 * of the cost of an access line.
 */
export function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'switchyard' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: isoTime,
    },
    destination ?? new BatchedStdout(),
  );
}

/** Writes out buffered lines before the process exits (waits at most a second). */
export function flushLogs(log: Logger): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    log.flush((err) => {
      clearTimeout(timer);
      // sonic-boom ends a flush with fsync, which pipes refuse (EINVAL): the lines are written all the same.
      if (err && (err as NodeJS.ErrnoException).code !== 'EINVAL') process.stderr.write(`switchyard: could not flush logs: ${err.message}\n`);
      resolve();
    });
  });
}
