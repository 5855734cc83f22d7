/**
 * The resolved routing config as workers receive it: plain data, made once
 * by src/config/load.ts from a validated file, frozen, and swapped whole on
 * reload. Provider keys are here because workers call providers; gateway
 * API keys are not (they never leave the front thread).
 */
import type { ProviderName, ProviderSettings } from './providers.js';

/**
 * A route's provider credentials, resolved once at load (CONTRACT.md,
 * Config file). One of three states, so a route cannot hold a key and be
 * missing one, or be keyless and still send a header:
 * - `key`: sent the provider's way (`Authorization: Bearer`, Azure's
 *   `api-key`, Anthropic's `x-api-key`); `source` is the variable it was
 *   read from, or `literal`;
 * - `aws`: an AWS access key pair (and session token) that signs each
 *   call with SigV4 (bedrock); `source` as for `key`;
 * - `aws_chain`: a bedrock deployment with no key of its own and none in
 *   the environment: each worker asks the standard AWS credential chain at
 *   call time (web identity, container credentials, profiles, instance
 *   metadata; workers/providers/bedrock/chain.ts). No secret is here: the
 *   chain hands its temporary credentials to the signer only;
 * - `not_required`: called without credentials (the mock
 *   provider; an `openai` deployment with its own `api_base` and no
 *   `api_key`, such as a self-hosted vLLM, TGI or Ollama);
 * - `missing`: `variable` names the unset environment variable; calls are
 *   answered `credentials_missing` and the route does not count for readiness.
 */
export type Credentials =
  | { readonly kind: 'key'; readonly key: string; readonly source: string }
  | { readonly kind: 'aws'; readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken: string | null; readonly source: string }
  | { readonly kind: 'aws_chain' }
  | { readonly kind: 'not_required' }
  | { readonly kind: 'missing'; readonly variable: string };

/** Whether the route has credentials to send (a key, an AWS key pair, or the AWS chain's at call time). */
export const hasCredentials = (credentials: Credentials): boolean => credentials.kind === 'key' || credentials.kind === 'aws' || credentials.kind === 'aws_chain';

/** The key to send, or null to send none. */
export function providerKey(credentials: Credentials): string | null {
  return credentials.kind === 'key' ? credentials.key : null;
}

export interface Timeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  /** Longest gap between two body chunks. */
  readonly idleMs: number;
  /** The whole request, headers to last byte. */
  readonly totalMs: number;
}

/** Where one routed request goes. */
export interface Upstream {
  readonly provider: ProviderName;
  /** Sent upstream as `model`. */
  readonly upstreamModel: string;
  /** Base URL with no trailing slash; null for providers without a network (mock). */
  readonly apiBase: string | null;
  readonly credentials: Credentials;
  readonly timeouts: Timeouts;
  /** The provider's own settings (its workers/providers/<name>/config.ts): read them with `settingsOf`. */
  readonly settings: ProviderSettings;
  /** `drop_params`: an OpenAI parameter the provider cannot honour is dropped instead of refused with 400. */
  readonly dropParams: boolean;
  /** params.responses_api: the upstream serves `POST /responses` itself, so Responses API calls are passed through. */
  readonly responsesApi: boolean;
  /**
   * The IP address the connection goes to instead of the `apiBase` host (a replica found by
   * `replicas: dns`), which stays the Host header and the TLS server name; null: the host's own.
   */
  readonly connectTo: string | null;
}

/** An upstream's settings as its provider's own type: the loader made them with that provider's config. */
export function settingsOf<Settings extends object>(upstream: { readonly settings: ProviderSettings }): Settings {
  return upstream.settings as Settings;
}

/** One `model_list` entry: a deployment of its alias (CONTRACT.md, Routing for high volume). */
export interface AliasRoute extends Upstream {
  readonly alias: string;
  /** `model_info.id`, default `<alias>-<n>`: the name in status, metrics, logs and headers, stable across reloads. */
  readonly id: string;
  /** Share of the group's traffic under simple-shuffle. */
  readonly weight: number;
  /** Priority tier: a higher order serves only while no deployment of a lower one can. */
  readonly order: number;
  /** Cap on this deployment's calls in flight in the pod; 0 for none. */
  readonly maxParallel: number;
  /** `rpm`: calls per limit window (CONTRACT.md, Shared state across pods); 0 for none. */
  readonly rpm: number;
  /** `tpm`: tokens per limit window; 0 for none. */
  readonly tpm: number;
  /**
   * params.server_metrics: the server publishes its load as Prometheus text at `<api_base origin>/metrics`
   * in this server's names; the front scrapes it and the `inference-aware` strategy scores it
   * (CONTRACT.md, Inference-aware routing). Null: a deployment like any other.
   */
  readonly serverMetrics: ServerMetricsKind | null;
  /** The replica this deployment is of an entry with `replicas`, or null for an entry without. */
  readonly replica: Replica | null;
}

/** One replica of a `model_list` entry with `replicas` (CONTRACT.md, Inference-aware routing, Replicas). */
export interface Replica {
  /** The entry's id; the deployment's id is `<entry>/<address>`. */
  readonly entry: string;
  /** `host:port` (`[v6]:port` for IPv6), as in the id. */
  readonly address: string;
}

/**
 * A `model_list` entry with `replicas`: each replica is a deployment of `aliases`. The set is kept
 * on its own so its group exists while DNS has given no address (503 `no_deployment_available`,
 * not 404), and is never a lone group, even with one replica.
 */
export interface ReplicaSet {
  /** The entry as configured (its alias, id, provider, `api_base`: the name DNS resolves); never routed itself. */
  readonly entry: AliasRoute;
  readonly source: 'list' | 'dns';
}

/** The servers whose `/metrics` names Switchyard reads (src/inference/server-metrics.ts). */
export type ServerMetricsKind = 'vllm' | 'sglang';

/** A `route_rules` entry: enables `<provider>/<upstream id>` names matching its globs. */
export interface RuleRoute extends Omit<Upstream, 'upstreamModel'> {
  readonly patterns: readonly string[];
}

export type RoutingStrategy = 'simple-shuffle' | 'least-busy' | 'latency-based-routing' | 'inference-aware';

/** `router_settings.inference_routing` resolved (CONTRACT.md, Inference-aware routing; docs/ROUTING.md). */
export interface InferenceRouting {
  /** Scrape period of each deployment with server_metrics; figures are stale after max(2 s, 3 periods). */
  readonly metricsIntervalMs: number;
  /** How long a scrape's figures are fresh: max(2 s, 3 × metricsIntervalMs). */
  readonly staleAfterMs: number;
  readonly weights: { readonly prefix: number; readonly queue: number; readonly kvCache: number };
  /** A queue estimate at or above this makes a replica saturated. */
  readonly queueThreshold: number;
  /** A KV-cache use (0..1) at or above this makes a replica saturated. */
  readonly kvCacheThreshold: number;
  /** Characters (UTF-16 code units) per prompt block (protocol/prefix-hash.ts). */
  readonly prefixBlockChars: number;
  /** Entries of each replica's prefix index (protocol/prefix-index.ts). */
  readonly prefixIndexBlocks: number;
}

/** A group and the groups tried after it, in order (`fallbacks`, `context_window_fallbacks`). */
export interface FallbackList {
  readonly group: string;
  readonly to: readonly string[];
}

/** `router_settings` resolved (docs/ROUTING.md lists each with its default). */
export interface RouterSettings {
  readonly strategy: RoutingStrategy;
  /** Attempts after the first, over a group and its fallbacks. */
  readonly numRetries: number;
  /** Least time between two attempts of one request on the same deployment. */
  readonly retryAfterMs: number;
  /** Failures within 60 s that cool a deployment. */
  readonly allowedFails: number;
  readonly cooldownMs: number;
  readonly fallbacks: readonly FallbackList[];
  readonly contextWindowFallbacks: readonly FallbackList[];
  /** How long a stream's head may be held waiting for its first content. */
  readonly streamCommitTimeoutMs: number;
  /**
   * The longest wait a provider asked for (Retry-After) that a request waits out itself when
   * nothing else can serve it; a longer one is answered at once with the provider's Retry-After.
   */
  readonly maxRetryWaitMs: number;
  /** The whole request, attempts included; null: the largest total timeout of the first group's deployments. */
  readonly timeoutMs: number | null;
  /** The window of `rpm` and `tpm`: a minute, shorter only in tests (router_settings.limit_window). */
  readonly limitWindowMs: number;
  /** `inference_routing`: read by the `inference-aware` strategy and by the front's scrapers. */
  readonly inference: InferenceRouting;
}

export interface RoutingConfig {
  /** Bumped on every reload, so logs can say which config served a request. */
  readonly version: number;
  /** One entry per deployment; the entries that share an alias are its group. */
  readonly aliases: readonly AliasRoute[];
  /**
   * The deployment-state slot of each entry of `aliases` (protocol/deployment-state.ts), given by
   * the front, which keeps one slot per deployment id across reloads; empty until it has.
   */
  readonly slots: readonly number[];
  /** The entries with `replicas`, in config order. */
  readonly replicaSets: readonly ReplicaSet[];
  readonly rules: readonly RuleRoute[];
  readonly router: RouterSettings;
  readonly maxResponseBodyBytes: number;
}
