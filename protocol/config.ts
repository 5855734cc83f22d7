/**
 * The resolved routing config as workers receive it: plain data, made once
 * by src/config/load.ts from a validated file, frozen, and swapped whole on
 * reload. Provider keys are here because workers call providers; gateway
 * API keys are not (they never leave the front thread).
 */
import type { ProviderName } from './providers.js';

export type CredentialStatus = 'present' | 'missing' | 'not_required';

export interface Timeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  /** Longest gap between two body chunks. */
  readonly idleMs: number;
  /** The whole request, headers to last byte. */
  readonly totalMs: number;
}

export interface MockSettings {
  readonly latencyMs: number;
  readonly streamChunks: number;
  readonly chunkIntervalMs: number;
  readonly embeddingDimensions: number;
  /** Fault injection (tests, demos): take the worker down mid-call. */
  readonly fault: 'none' | 'crash' | 'exit';
}

/** Where one routed request goes. */
export interface Upstream {
  readonly provider: ProviderName;
  /** Sent upstream as `model`. */
  readonly upstreamModel: string;
  /** Base URL with no trailing slash; null for providers without a network (mock). */
  readonly apiBase: string | null;
  readonly apiKey: string | null;
  readonly credentials: CredentialStatus;
  /** Name of the environment variable the key comes from, `literal`, or null. */
  readonly credentialsSource: string | null;
  readonly timeouts: Timeouts;
  readonly mock: MockSettings;
  /** params.responses_api: the upstream serves `POST /responses` itself, so Responses API calls are passed through. */
  readonly responsesApi: boolean;
}

export interface AliasRoute extends Upstream {
  readonly alias: string;
}

/** A `route_rules` entry: enables `<provider>/<upstream id>` names matching its globs. */
export interface RuleRoute extends Omit<Upstream, 'upstreamModel'> {
  readonly patterns: readonly string[];
}

export interface RoutingConfig {
  /** Bumped on every reload, so logs can say which config served a request. */
  readonly version: number;
  /** One entry per deployment; several may share an alias (round-robin). */
  readonly aliases: readonly AliasRoute[];
  readonly rules: readonly RuleRoute[];
  readonly maxResponseBodyBytes: number;
}
