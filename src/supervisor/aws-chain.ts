/**
 * What the front knows of the standard AWS credential chain (bedrock
 * deployments whose Credentials are `aws_chain`), per region, without
 * loading any AWS package itself: the workers run the chain
 * (workers/providers/bedrock/chain.ts) and report its outcome when it
 * changes (AwsChainStateFrame). Readiness counts a chain deployment once
 * its chain has produced credentials that have not expired
 * (gateway-checks.ts), /status/models shows each deployment's state
 * (src/front/operational.ts), and the log gets one line when a chain fails
 * or recovers, never one per request (docs/OPERATIONS.md, Logs).
 */
import type { Logger } from 'pino';
import type { AwsChainStateFrame } from '../../protocol/frames.js';

/** A region's chain as the pod knows it: `pending` until a worker has reported. */
export interface AwsChainStatus {
  readonly state: 'pending' | 'ok' | 'failed';
  /** Epoch ms when the credentials expire; null when they do not, or there are none. */
  readonly expiresAt: number | null;
  /** The SDK provider that produced them (`fromTokenFile`…), as the SDK names it. */
  readonly source: string | null;
  /** Why the chain gave none, naming the sources it tried (no secret: the worker redacted it). */
  readonly error: string | null;
  /** The names of the sources the failed chain tried. */
  readonly tried: readonly string[];
}

const PENDING: AwsChainStatus = Object.freeze({ state: 'pending', expiresAt: null, source: null, error: null, tried: [] });

export class AwsChainStates {
  readonly #byRegion = new Map<string, AwsChainStatus>();
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** A worker's report. The last report wins (every worker runs its own chain); a change of state is logged. */
  report(frame: AwsChainStateFrame): void {
    const before = this.status(frame.region);
    this.#byRegion.set(frame.region, Object.freeze({ state: frame.state, expiresAt: frame.expiresAt, source: frame.source, error: frame.error, tried: frame.tried }));
    if (frame.state === 'failed' && before.state !== 'failed') {
      this.#log.error({ event: 'aws_credentials_failed', region: frame.region, tried: frame.tried, error: frame.error }, `the AWS credential chain (${frame.region}) gave no credentials; tried ${frame.tried.join(', ')}`);
    } else if (frame.state === 'ok' && before.state === 'failed') {
      this.#log.info({ event: 'aws_credentials_recovered', region: frame.region, source: frame.source, expires_at: isoOrNull(frame.expiresAt) }, `the AWS credential chain (${frame.region}) has credentials again`);
    }
  }

  status(region: string): AwsChainStatus {
    return this.#byRegion.get(region) ?? PENDING;
  }

  /** The region's chain produced credentials that have not expired at `now`. */
  credentialed(region: string, now: number): boolean {
    const status = this.status(region);
    return status.state === 'ok' && (status.expiresAt === null || status.expiresAt > now);
  }
}

export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
