/**
 * The config file format of CONTRACT.md, as zod schemas. Defaults live here
 * and nowhere else. Objects are loose on purpose: a LiteLLM config.yaml must
 * load as it is, so keys we do not support are collected by
 * `unsupportedKeys()` and reported as one warning each instead of failing.
 */
import { z } from 'zod';
import { providerParamsShape } from './provider-params.js';
import { replicaParamsShape } from './replicas.js';

const seconds = z.number().positive().finite();

/** The keys of a model's params that Switchyard understands. */
export const paramsSchema = z.looseObject({
  /** `<provider>/<upstream model id>`. */
  model: z.string().regex(/^[a-z0-9_-]+\/.+$/, 'must be "<provider>/<upstream model id>", e.g. "openai/gpt-4o-mini"'),
  api_base: z.url({ protocol: /^https?$/ }).optional(),
  /** A literal key or `os.environ/NAME`. */
  api_key: z.string().min(1).optional(),
  /** Whole-request timeout, seconds. */
  timeout: seconds.optional(),
  connect_timeout: seconds.optional(),
  /** Time allowed until the provider's response headers arrive. */
  headers_timeout: seconds.optional(),
  /** Longest gap between two chunks of the response body (streams included). */
  idle_timeout: seconds.optional(),
  /**
   * Switchyard's own key, not LiteLLM's: the upstream serves `POST /responses` itself (OpenAI,
   * vLLM, …), so `POST /v1/responses` is passed through to it instead of translated to chat.
   * Only for providers whose upstream can (their config.ts, `info.responsesApi`).
   */
  responses_api: z.boolean().optional(),
  /** An OpenAI parameter the provider cannot honour is dropped instead of refused with 400 (CONTRACT.md, Native providers). */
  drop_params: z.boolean().optional(),
  // Each provider's own keys (its workers/providers/<name>/config.ts): api_version, anthropic_version, the mock knobs.
  ...providerParamsShape,
  // Routing (CONTRACT.md, Routing for high volume): meaningful on a model_list entry only.
  /** Share of the group's traffic under simple-shuffle. */
  weight: z.number().positive().finite().optional(),
  /** Priority tier; lower serves first. */
  order: z.number().int().nonnegative().optional(),
  /** Cap on this deployment's calls in flight in the pod. */
  max_parallel_requests: z.number().int().positive().optional(),
  /** LiteLLM's requests per minute (CONTRACT.md, Shared state across pods): per pod, or for the fleet with a redis_url. */
  rpm: z.number().int().positive().max(1_000_000_000).optional(),
  /** LiteLLM's tokens per minute, counted as CONTRACT.md's Shared state section says. */
  tpm: z.number().int().positive().max(1_000_000_000_000).optional(),
  /** The server publishes its load at `<api_base origin>/metrics` in these names (CONTRACT.md, Inference-aware routing). */
  server_metrics: z.enum(['vllm', 'sglang']).optional(),
  // Replicas (CONTRACT.md, Inference-aware routing): `replicas`, `dns_refresh`, `dns_servers` (src/config/replicas.ts).
  ...replicaParamsShape,
});

/** The params of a route rule: a rule is not a deployment, so it has no model, weight, order, cap, limits, replicas or server metrics. */
const ruleParamsSchema = paramsSchema.omit({ model: true, weight: true, order: true, max_parallel_requests: true, rpm: true, tpm: true, replicas: true, dns_refresh: true, dns_servers: true, server_metrics: true });

/** A deployment id: printable ASCII without spaces, as it appears in headers, metrics and logs. LiteLLM writes some as numbers. */
const deploymentId = z
  .union([z.string(), z.number().transform(String)])
  .pipe(z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1-128 printable ASCII characters without spaces'));

const modelInfoSchema = z.looseObject({
  id: deploymentId.optional(),
});

const modelEntrySchema = z.looseObject({
  model_name: z.string().min(1).max(256),
  params: paramsSchema.optional(),
  litellm_params: paramsSchema.optional(),
  model_info: modelInfoSchema.optional(),
});

const routeRuleSchema = z.looseObject({
  provider: z.string().regex(/^[a-z0-9_-]+$/, 'must be a provider name such as "openai"'),
  models: z.array(z.string().min(1)).min(1).default(['*']),
  params: ruleParamsSchema.optional(),
});

/** `[{ group: [fallback, …] }, …]`, LiteLLM's shape. */
const fallbacksSchema = z.array(z.record(z.string().min(1), z.array(z.string().min(1))));

/** The strategies Switchyard implements; LiteLLM's others load with a warning and route as simple-shuffle. */
export const ROUTING_STRATEGIES = ['simple-shuffle', 'least-busy', 'latency-based-routing', 'inference-aware'] as const;
export const LITELLM_ONLY_STRATEGIES = ['usage-based-routing', 'usage-based-routing-v2', 'cost-based-routing'] as const;

const weight = z.number().nonnegative().finite();

/** `router_settings.inference_routing` (CONTRACT.md, Inference-aware routing); Switchyard's own, defaults in load.ts. */
const inferenceRoutingSchema = z.looseObject({
  /** Scrape period per deployment with server_metrics, ms. */
  metrics_interval_ms: z.number().int().min(10).max(60_000).optional(),
  weights: z.looseObject({ prefix: weight.optional(), queue: weight.optional(), kv_cache: weight.optional() }).optional(),
  /** Waiting requests (scraped, plus this pod's calls since) that make a replica saturated. */
  queue_threshold: z.number().int().positive().optional(),
  /** KV-cache use, 0..1, that makes a replica saturated. */
  kv_cache_threshold: z.number().positive().max(1).optional(),
  /** Characters per prompt block. */
  prefix_block_chars: z.number().int().min(1).max(65_536).optional(),
  /** Entries of each replica's prefix index (about 24 bytes each). */
  prefix_index_blocks: z.number().int().min(1).max(4_194_304).optional(),
});

/** LiteLLM's `router_settings` keys that Switchyard honours; any other is warned about by name. */
const routerSettingsSchema = z.looseObject({
  routing_strategy: z.enum([...ROUTING_STRATEGIES, ...LITELLM_ONLY_STRATEGIES]).optional(),
  num_retries: z.number().int().nonnegative().max(100).optional(),
  retry_after: z.number().nonnegative().finite().optional(),
  allowed_fails: z.number().int().nonnegative().optional(),
  cooldown_time: z.number().nonnegative().finite().optional(),
  fallbacks: fallbacksSchema.optional(),
  context_window_fallbacks: fallbacksSchema.optional(),
  stream_commit_timeout: seconds.optional(),
  /** The longest provider Retry-After the gateway waits out itself; 0: never wait, answer at once. */
  max_retry_wait: z.number().nonnegative().finite().optional(),
  timeout: seconds.optional(),
  // Shared state across pods (CONTRACT.md): a redis:// or rediss:// URL, or LiteLLM's three keys.
  redis_url: z.string().min(1).optional(),
  redis_host: z.string().min(1).optional(),
  redis_port: z.union([z.number().int().min(1).max(65_535), z.string().regex(/^\d{1,5}$/, 'must be a port number').transform(Number)]).optional(),
  redis_password: z.string().optional(),
  /** For tests only: the length of the rpm/tpm window in seconds (default 60, the minute LiteLLM's keys mean). */
  limit_window: seconds.optional(),
  inference_routing: inferenceRoutingSchema.optional(),
});

/** `litellm_settings`: its retry and fallback keys route (`router_settings` wins when both set one); `drop_params` is every deployment's default. */
const litellmSettingsSchema = z.looseObject({
  num_retries: routerSettingsSchema.shape.num_retries,
  /** The default of every deployment's `drop_params`. */
  drop_params: z.boolean().optional(),
  fallbacks: fallbacksSchema.optional(),
  context_window_fallbacks: fallbacksSchema.optional(),
});

const limitsSchema = z.looseObject({
  max_request_body_bytes: z.number().int().positive().optional(),
  max_response_body_bytes: z.number().int().positive().optional(),
});

const serverSchema = z.looseObject({
  host: z.string().min(1).optional(),
  port: z.number().int().min(0).max(65_535).optional(),
  /** Worker threads; 0 runs provider calls on the front thread (best on a one-core pod). */
  workers: z.number().int().nonnegative().max(256).optional(),
  /** Seconds between `: keepalive` comments on a stream that carries no chunk. */
  stream_keepalive_interval: seconds.optional(),
  /** Provider requests in flight past which new ones get 503 overloaded with Retry-After. */
  max_in_flight: z.number().int().positive().optional(),
  /** Seconds between SIGTERM (readiness turns 503) and closing the listen socket, for load balancers to notice. */
  drain_delay: z.number().nonnegative().finite().optional(),
  /** Seconds in-flight requests and streams get to finish after the socket closes. */
  drain_timeout: z.number().nonnegative().finite().optional(),
});

/** Probe behaviour; durations in seconds. TOOLKIT_HEALTH_* variables override. */
const healthSchema = z.looseObject({
  /** Default per-check timeout. */
  check_timeout: seconds.optional(),
  /** Readiness warm-up window. */
  startup_delay: z.number().nonnegative().finite().optional(),
  /** How long a completed health run is reused by later probes. */
  cache_ttl: z.number().nonnegative().finite().optional(),
  /** The longest a probe waits for a run before answering from the last result. */
  probe_budget: seconds.optional(),
  /** Event-loop delay (p99 since the last check) above which `event_loop` is degraded. */
  event_loop_delay_threshold: seconds.optional(),
});

export const configFileSchema = z.looseObject({
  model_list: z.array(modelEntrySchema).default([]),
  route_rules: z.array(routeRuleSchema).default([]),
  limits: limitsSchema.optional(),
  server: serverSchema.optional(),
  health: healthSchema.optional(),
  router_settings: routerSettingsSchema.optional(),
  litellm_settings: litellmSettingsSchema.optional(),
});

export type ConfigFile = z.infer<typeof configFileSchema>;
export type ParamsInput = z.infer<typeof paramsSchema>;

/** Keys a LiteLLM config may carry that Switchyard ignores; each found one is warned about by name. */
export function unsupportedKeys(file: ConfigFile): string[] {
  const found: string[] = [];
  const extra = (value: object, known: readonly string[], path: string) => {
    for (const key of Object.keys(value)) if (!known.includes(key)) found.push(`${path}${key}`);
  };
  const paramKeys = Object.keys(paramsSchema.shape);
  extra(file, Object.keys(configFileSchema.shape), '');
  file.model_list.forEach((entry, i) => {
    extra(entry, Object.keys(modelEntrySchema.shape), `model_list[${i}].`);
    const params = entry.params ?? entry.litellm_params;
    const key = entry.params ? 'params' : 'litellm_params';
    if (params) extra(params, paramKeys, `model_list[${i}].${key}.`);
    if (entry.model_info) extra(entry.model_info, Object.keys(modelInfoSchema.shape), `model_list[${i}].model_info.`);
  });
  file.route_rules.forEach((rule, i) => {
    extra(rule, Object.keys(routeRuleSchema.shape), `route_rules[${i}].`);
    if (rule.params) extra(rule.params, Object.keys(ruleParamsSchema.shape), `route_rules[${i}].params.`);
  });
  if (file.router_settings) extra(file.router_settings, Object.keys(routerSettingsSchema.shape), 'router_settings.');
  const inference = file.router_settings?.inference_routing;
  if (inference) extra(inference, Object.keys(inferenceRoutingSchema.shape), 'router_settings.inference_routing.');
  if (inference?.weights) extra(inference.weights, Object.keys(inferenceRoutingSchema.shape.weights.unwrap().shape), 'router_settings.inference_routing.weights.');
  if (file.litellm_settings) extra(file.litellm_settings, Object.keys(litellmSettingsSchema.shape), 'litellm_settings.');
  if (file.limits) extra(file.limits, Object.keys(limitsSchema.shape), 'limits.');
  if (file.server) extra(file.server, Object.keys(serverSchema.shape), 'server.');
  if (file.health) extra(file.health, Object.keys(healthSchema.shape), 'health.');
  return found;
}
