/**
 * Config loading: YAML file (or the embedded demo) → zod validation →
 * environment overrides → one frozen `GatewayConfig`. Precedence: defaults <
 * file < environment (CONTRACT.md, Environment).
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import type { AliasRoute, Credentials, FallbackList, InferenceRouting, ReplicaSet, RouterSettings, RoutingConfig, RuleRoute, Timeouts, Upstream } from '../../protocol/config.js';
import { PROVIDER_NAMES, isProviderName, type ProviderName, type ProviderSettings } from '../../protocol/providers.js';
import { PROVIDER_CONFIGS } from '../../workers/providers/configs.js';
import { foreignParamKeys } from './provider-params.js';
import { configFileSchema, unsupportedKeys, LITELLM_ONLY_STRATEGIES, type ConfigFile, type ParamsInput } from './schema.js';
import { availableCpus } from './cpu-limit.js';
import { addressOf, isDnsSet, replicaRoute, replicaSpecOf, ReplicaParamsError, type ReplicaSpec } from './replicas.js';
import { chooseWorkers, type WorkerMode } from './workers.js';
import { resolveSharedState, SharedStateSettingsError, type SharedStateConfig } from './shared-state.js';
import { DEMO_CONFIG_YAML } from './demo.js';
import { HealthSettingsError, healthSettingsFromEnv } from '../health/settings.js';
import { TracingSettingsError, tracingSettingsFromEnv, type TracingSettings } from '../tracing/settings.js';

export const DEFAULTS = {
  host: '0.0.0.0',
  port: 8080,
  maxRequestBodyBytes: 8 * 1024 * 1024,
  maxResponseBodyBytes: 64 * 1024 * 1024,
  streamKeepaliveMs: 15_000,
  maxInFlight: 10_000,
  drainDelayMs: 5_000,
  drainTimeoutMs: 30_000,
  logLevel: 'info',
  timeouts: { connectMs: 10_000, headersMs: 600_000, idleMs: 600_000, totalMs: 600_000 },
  health: { checkTimeoutMs: 5_000, startupDelayMs: 0, cacheTtlMs: 1_000, probeBudgetMs: 900, eventLoopDelayMs: 200 },
  // CONTRACT.md, Routing for high volume: LiteLLM's defaults where it has them.
  router: { strategy: 'simple-shuffle', numRetries: 2, retryAfterMs: 0, allowedFails: 3, cooldownMs: 30_000, streamCommitTimeoutMs: 10_000, maxRetryWaitMs: 10_000, limitWindowMs: 60_000 },
  // CONTRACT.md, Inference-aware routing: the contract's values (the Inference Extension's where it has them; docs/ROUTING.md).
  inference: { metricsIntervalMs: 250, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 65_536 },
  deployment: { weight: 1, order: 1 },
} as const;

export interface HealthConfig {
  readonly checkTimeoutMs: number;
  readonly startupDelayMs: number;
  readonly cacheTtlMs: number;
  readonly probeBudgetMs: number;
  readonly eventLoopDelayMs: number;
}

export interface GatewayConfig {
  /** The file path, or `embedded demo config`. */
  readonly source: string;
  readonly host: string;
  readonly port: number;
  /** Worker threads, and why that many (src/config/workers.ts). */
  readonly workerMode: WorkerMode;
  readonly maxRequestBodyBytes: number;
  readonly streamKeepaliveMs: number;
  /** Provider requests in flight past which new ones get 503 `overloaded` (with Retry-After). */
  readonly maxInFlight: number;
  /** SIGTERM → listen socket closed. */
  readonly drainDelayMs: number;
  /** Listen socket closed → whatever is still open is ended with `shutting_down`. */
  readonly drainTimeoutMs: number;
  readonly logLevel: string;
  /** Accepted bearer tokens. */
  readonly apiKeys: readonly string[];
  /** True when no key was configured and one was made at start (it is logged once). */
  readonly apiKeyGenerated: boolean;
  /** Date.now() when this config was loaded (Anthropic's model list gives it as each alias's `created_at`). */
  readonly loadedAt: number;
  readonly routing: RoutingConfig;
  readonly health: HealthConfig;
  /** Null when tracing is off (src/tracing/settings.ts); read at start only, like the worker count. */
  readonly tracing: TracingSettings | null;
  /** One line per config key we read but do not support. */
  readonly warnings: readonly string[];
  /** Redis for limits and cooldowns shared by the fleet (src/config/shared-state.ts); null: each pod alone. Front thread only. */
  readonly sharedState: SharedStateConfig | null;
}

/** A config that cannot be used; the message names the file, the path inside it and the problem. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A whole decimal number in an environment variable: no blanks, hex or exponents. */
const envInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole decimal number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** Seconds in an environment variable: `5`, `0.5`. */
const envSeconds = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a number of seconds, e.g. 5 or 0.5')
  .transform((text) => Math.round(Number(text) * 1000));

const envSchema = z.object({
  PORT: envInt(0, 65_535).optional(),
  HOST: z.string().min(1).optional(),
  GATEWAY_WORKERS: envInt(0, 256).optional(),
  GATEWAY_MAX_BODY_BYTES: envInt(1, Number.MAX_SAFE_INTEGER).optional(),
  GATEWAY_MAX_RESPONSE_BYTES: envInt(1, Number.MAX_SAFE_INTEGER).optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).optional(),
  GATEWAY_MAX_IN_FLIGHT: envInt(1, 10_000_000).optional(),
  GATEWAY_DRAIN_DELAY: envSeconds.optional(),
  GATEWAY_DRAIN_TIMEOUT: envSeconds.optional(),
  GATEWAY_API_KEY: z.string().optional(),
  GATEWAY_API_KEYS: z.string().optional(),
});

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env, version = 1): GatewayConfig {
  const path = env.GATEWAY_CONFIG;
  const source = path ? path : 'embedded demo config';
  let text: string;
  if (path === undefined || path === '') text = DEMO_CONFIG_YAML;
  else {
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError(`${path}: cannot read the config file: ${(err as Error).message}`);
    }
  }
  return parseConfig(text, source, env, version);
}

/** Validates a config text; `source` names it in every message. */
export function parseConfig(text: string, source: string, env: Env = process.env, version = 1): GatewayConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true }) ?? {};
  } catch (err) {
    const detail = err instanceof YAMLParseError ? err.message.split('\n')[0] : String(err);
    throw new ConfigError(`${source}: not valid YAML: ${detail}`);
  }
  const parsed = configFileSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`${source}: ${describeIssues(parsed.error)}`);
  const file = parsed.data;

  const envParsed = envSchema.safeParse(pickDefined(env, Object.keys(envSchema.shape)));
  if (!envParsed.success) throw new ConfigError(`environment: ${describeIssues(envParsed.error)}`);
  const e = envParsed.data;

  const warnings = unsupportedKeys(file).map((key) => `${source}: "${key}" is not supported by Switchyard and is ignored`);
  const strategy = file.router_settings?.routing_strategy;
  if (strategy !== undefined && (LITELLM_ONLY_STRATEGIES as readonly string[]).includes(strategy)) {
    warnings.push(`${source}: router_settings.routing_strategy "${strategy}" is not supported by Switchyard; routing with simple-shuffle`);
  }
  let toolkit: ReturnType<typeof healthSettingsFromEnv>;
  try {
    toolkit = healthSettingsFromEnv(env);
  } catch (err) {
    if (err instanceof HealthSettingsError) throw new ConfigError(`environment: ${err.message}`);
    throw err;
  }
  let tracing: TracingSettings | null;
  try {
    tracing = tracingSettingsFromEnv(env);
  } catch (err) {
    if (err instanceof TracingSettingsError) throw new ConfigError(`environment: ${err.message}`);
    throw err;
  }
  const h = file.health;
  const secondsOr = (value: number | undefined, fallback: number) => (value === undefined ? fallback : Math.round(value * 1000));
  const health: HealthConfig = Object.freeze({
    // TOOLKIT_HEALTH_* win over the file when set (environment overrides config).
    checkTimeoutMs: env.TOOLKIT_HEALTH_CHECK_TIMEOUT ? toolkit.defaultTimeoutMs : secondsOr(h?.check_timeout, DEFAULTS.health.checkTimeoutMs),
    startupDelayMs: env.TOOLKIT_HEALTH_STARTUP_DELAY ? toolkit.startupDelayMs : secondsOr(h?.startup_delay, DEFAULTS.health.startupDelayMs),
    cacheTtlMs: secondsOr(h?.cache_ttl, DEFAULTS.health.cacheTtlMs),
    probeBudgetMs: secondsOr(h?.probe_budget, DEFAULTS.health.probeBudgetMs),
    eventLoopDelayMs: secondsOr(h?.event_loop_delay_threshold, DEFAULTS.health.eventLoopDelayMs),
  });
  const maxResponseBodyBytes = e.GATEWAY_MAX_RESPONSE_BYTES ?? file.limits?.max_response_body_bytes ?? DEFAULTS.maxResponseBodyBytes;

  const dropParams = file.litellm_settings?.drop_params ?? false;
  const perAlias = new Map<string, number>();
  const idsAt = new Map<string, string>();
  const aliases: AliasRoute[] = [];
  const replicaSets: ReplicaSet[] = [];
  const claim = (id: string, where: string, key: string) => {
    const clash = idsAt.get(id);
    if (clash !== undefined) throw new ConfigError(`${source}: ${key}: "${id}" is already the id of ${clash}; deployment ids must be unique`);
    idsAt.set(id, where);
  };
  file.model_list.forEach((entry, i) => {
    const params = entry.params ?? entry.litellm_params;
    const at = `model_list[${i}].${entry.params ? 'params' : 'litellm_params'}`;
    if (!params) throw new ConfigError(`${source}: model_list[${i}]: needs "params" (or "litellm_params") with a "model"`);
    const slash = params.model.indexOf('/');
    const provider = params.model.slice(0, slash);
    if (!isProviderName(provider)) throw new ConfigError(`${source}: ${at}.model: unknown provider "${provider}" (known: ${PROVIDER_NAMES.join(', ')})`);
    for (const key of foreignParamKeys(provider, params)) warnings.push(`${source}: "${at}.${key}" is not a param of provider "${provider}" and is ignored`);
    const n = perAlias.get(entry.model_name) ?? 0;
    perAlias.set(entry.model_name, n + 1);
    const id = entry.model_info?.id ?? `${entry.model_name}-${n}`;
    claim(id, `model_list[${i}]`, `model_list[${i}].model_info.id`);
    const serverMetrics = params.server_metrics ?? null;
    if (serverMetrics !== null && params.api_base === undefined && params.replicas === undefined) {
      throw new ConfigError(`${source}: ${at}.server_metrics: needs the deployment's own api_base or replicas (its /metrics is read at each one's origin)`);
    }
    const context = { env, dropParams, at: `${source}: ${at}` };
    const route: AliasRoute = Object.freeze({
      alias: entry.model_name,
      id,
      weight: params.weight ?? DEFAULTS.deployment.weight,
      order: params.order ?? DEFAULTS.deployment.order,
      maxParallel: params.max_parallel_requests ?? 0,
      rpm: params.rpm ?? 0,
      tpm: params.tpm ?? 0,
      serverMetrics,
      upstreamModel: params.model.slice(slash + 1),
      replica: null,
      ...resolveUpstream(provider, params, context),
    });
    let spec: ReplicaSpec;
    try {
      spec = replicaSpecOf(params, route.apiBase, provider);
    } catch (err) {
      if (err instanceof ReplicaParamsError) throw new ConfigError(`${source}: ${at}.${err.key}: ${err.message}`);
      throw err;
    }
    if (spec.kind === 'none') aliases.push(route);
    else if (spec.kind === 'list') {
      if (params.api_base !== undefined) warnings.push(`${source}: "${at}.api_base" is not called: "${at}.replicas" lists the api_base of each replica`);
      replicaSets.push(Object.freeze({ entry: route, source: 'list' }));
      spec.bases.forEach((base, j) => {
        // Each replica resolved at its own api_base: a keyless self-hosted server is keyless at every one.
        const replica = replicaRoute({ ...route, ...resolveUpstream(provider, { ...params, api_base: base }, context) }, addressOf(base), base, null);
        claim(replica.id, `${at}.replicas[${j}]`, `${at}.replicas[${j}]`);
        aliases.push(replica);
      });
    } else replicaSets.push(Object.freeze({ entry: route, source: 'dns', dns: spec.dns, at: aliases.length }));
  });
  // A DNS replica's id is made at run time: no configured id may be one it could take.
  for (const set of replicaSets.filter(isDnsSet)) {
    for (const [id, where] of idsAt) {
      if (id.startsWith(`${set.entry.id}/`)) throw new ConfigError(`${source}: ${where}: "${id}" could be the id of a replica of ${idsAt.get(set.entry.id)} (replicas: dns), "${set.entry.id}/<address>:<port>"; choose another`);
    }
  }
  const router = resolveRouter(file, new Set(perAlias.keys()), source);

  const rules: RuleRoute[] = file.route_rules.map((rule, i) => {
    if (!isProviderName(rule.provider)) throw new ConfigError(`${source}: route_rules[${i}].provider: unknown provider "${rule.provider}" (known: ${PROVIDER_NAMES.join(', ')})`);
    for (const key of foreignParamKeys(rule.provider, rule.params ?? {})) warnings.push(`${source}: "route_rules[${i}].params.${key}" is not a param of provider "${rule.provider}" and is ignored`);
    return Object.freeze({ patterns: Object.freeze([...rule.models]), ...resolveUpstream(rule.provider, rule.params ?? {}, { env, dropParams, at: `${source}: route_rules[${i}].params` }) });
  });

  const explicitKeys = [e.GATEWAY_API_KEY, ...(e.GATEWAY_API_KEYS ?? '').split(',')].map((k) => k?.trim() ?? '').filter((k) => k.length > 0);
  const apiKeyGenerated = explicitKeys.length === 0;
  const apiKeys = apiKeyGenerated ? [`sy-${randomBytes(24).toString('base64url')}`] : [...new Set(explicitKeys)];

  return Object.freeze({
    source,
    host: e.HOST ?? file.server?.host ?? DEFAULTS.host,
    port: e.PORT ?? file.server?.port ?? DEFAULTS.port,
    workerMode: chooseWorkers(e.GATEWAY_WORKERS, file.server?.workers, availableCpus()),
    maxRequestBodyBytes: e.GATEWAY_MAX_BODY_BYTES ?? file.limits?.max_request_body_bytes ?? DEFAULTS.maxRequestBodyBytes,
    streamKeepaliveMs: file.server?.stream_keepalive_interval !== undefined ? file.server.stream_keepalive_interval * 1000 : DEFAULTS.streamKeepaliveMs,
    maxInFlight: e.GATEWAY_MAX_IN_FLIGHT ?? file.server?.max_in_flight ?? DEFAULTS.maxInFlight,
    drainDelayMs: e.GATEWAY_DRAIN_DELAY ?? secondsOr(file.server?.drain_delay, DEFAULTS.drainDelayMs),
    drainTimeoutMs: e.GATEWAY_DRAIN_TIMEOUT ?? secondsOr(file.server?.drain_timeout, DEFAULTS.drainTimeoutMs),
    logLevel: e.LOG_LEVEL ?? DEFAULTS.logLevel,
    apiKeys: Object.freeze(apiKeys),
    apiKeyGenerated,
    loadedAt: Date.now(),
    health,
    tracing,
    routing: Object.freeze({ version, aliases: Object.freeze(aliases), slots: Object.freeze([]), replicaSets: Object.freeze(replicaSets), rules: Object.freeze(rules), router, maxResponseBodyBytes }),
    warnings: Object.freeze(warnings),
    sharedState: sharedStateOf(file, env, source),
  });
}

function sharedStateOf(file: ConfigFile, env: Env, source: string): SharedStateConfig | null {
  try {
    return resolveSharedState(file.router_settings ?? {}, env);
  } catch (err) {
    if (err instanceof SharedStateSettingsError) throw new ConfigError(`${source}: ${err.message}`);
    throw err;
  }
}

/** `router_settings` (and `litellm_settings`' retry and fallback keys) with their defaults; fallbacks must name groups. */
function resolveRouter(file: ConfigFile, groups: ReadonlySet<string>, source: string): RouterSettings {
  const r = file.router_settings ?? {};
  const l = file.litellm_settings ?? {};
  const fallbacks = (key: 'fallbacks' | 'context_window_fallbacks'): readonly FallbackList[] => {
    const [list, path] = r[key] !== undefined ? [r[key], `router_settings.${key}`] : [l[key], `litellm_settings.${key}`];
    const out: FallbackList[] = [];
    (list ?? []).forEach((entry, i) => {
      for (const [group, to] of Object.entries(entry)) {
        if (!groups.has(group)) throw new ConfigError(`${source}: ${path}[${i}]: "${group}" is not a model_name of model_list`);
        to.forEach((target, j) => {
          if (!groups.has(target)) throw new ConfigError(`${source}: ${path}[${i}].${group}[${j}]: "${target}" is not a model_name of model_list`);
          if (target === group) throw new ConfigError(`${source}: ${path}[${i}].${group}[${j}]: a group cannot fall back to itself`);
        });
        out.push(Object.freeze({ group, to: Object.freeze([...new Set(to)]) }));
      }
    });
    return Object.freeze(out);
  };
  const strategy = r.routing_strategy;
  const ms = (s: number | undefined, fallback: number) => (s === undefined ? fallback : Math.round(s * 1000));
  return Object.freeze({
    strategy: strategy === 'least-busy' || strategy === 'latency-based-routing' || strategy === 'inference-aware' ? strategy : DEFAULTS.router.strategy,
    numRetries: r.num_retries ?? l.num_retries ?? DEFAULTS.router.numRetries,
    retryAfterMs: ms(r.retry_after, DEFAULTS.router.retryAfterMs),
    // 0 and 1 both cool on the first failure: a deployment is never cooled before it failed.
    allowedFails: Math.max(1, r.allowed_fails ?? DEFAULTS.router.allowedFails),
    cooldownMs: ms(r.cooldown_time, DEFAULTS.router.cooldownMs),
    fallbacks: fallbacks('fallbacks'),
    contextWindowFallbacks: fallbacks('context_window_fallbacks'),
    streamCommitTimeoutMs: ms(r.stream_commit_timeout, DEFAULTS.router.streamCommitTimeoutMs),
    maxRetryWaitMs: ms(r.max_retry_wait, DEFAULTS.router.maxRetryWaitMs),
    timeoutMs: r.timeout === undefined ? null : Math.round(r.timeout * 1000),
    limitWindowMs: ms(r.limit_window, DEFAULTS.router.limitWindowMs),
    inference: resolveInference(r.inference_routing ?? {}, source),
  });
}

/** `router_settings.inference_routing` with its defaults; weights that would score every replica alike are refused. */
function resolveInference(i: NonNullable<NonNullable<ConfigFile['router_settings']>['inference_routing']>, source: string): InferenceRouting {
  const d = DEFAULTS.inference;
  const w = i.weights ?? {};
  const weights = Object.freeze({ prefix: w.prefix ?? d.weights.prefix, queue: w.queue ?? d.weights.queue, kvCache: w.kv_cache ?? d.weights.kvCache });
  if (weights.prefix + weights.queue + weights.kvCache === 0) throw new ConfigError(`${source}: router_settings.inference_routing.weights: at least one weight must be above 0`);
  const metricsIntervalMs = i.metrics_interval_ms ?? d.metricsIntervalMs;
  return Object.freeze({
    metricsIntervalMs,
    // CONTRACT.md: stale after max(2 s, 3 × metrics_interval_ms).
    staleAfterMs: Math.max(2_000, 3 * metricsIntervalMs),
    weights,
    queueThreshold: i.queue_threshold ?? d.queueThreshold,
    kvCacheThreshold: i.kv_cache_threshold ?? d.kvCacheThreshold,
    prefixBlockChars: i.prefix_block_chars ?? d.prefixBlockChars,
    prefixIndexBlocks: i.prefix_index_blocks ?? d.prefixIndexBlocks,
  });
}

/** Where a route's upstream is resolved: the environment, the config-wide `drop_params`, and the route's path for messages. */
interface UpstreamContext {
  readonly env: Env;
  readonly dropParams: boolean;
  readonly at: string;
}

function resolveUpstream(provider: ProviderName, params: Partial<ParamsInput>, { env, dropParams, at }: UpstreamContext): Omit<Upstream, 'upstreamModel'> {
  const config = PROVIDER_CONFIGS[provider];
  const { apiBase: base, responsesApi } = config.info;
  if (params.responses_api && !responsesApi) {
    const able = PROVIDER_NAMES.filter((name) => PROVIDER_CONFIGS[name].info.responsesApi).map((name) => `"${name}"`).join(', ');
    throw new ConfigError(`${at}.responses_api: the "${provider}" provider has no Responses API to pass through to (only ${able} can)`);
  }
  if (base === 'required' && params.api_base === undefined) throw new ConfigError(`${at}.api_base: provider "${provider}" needs its api_base (e.g. https://<resource>.openai.azure.com)`);
  let settings: ProviderSettings;
  try {
    settings = Object.freeze(config.settings(params, env));
  } catch (err) {
    throw new ConfigError(`${at}.${(err as Error).message}`);
  }
  // A hosted default with `{region}` (bedrock's) is the region's endpoint.
  const hosted = base === null || base === 'required' || !('region' in settings) ? base : base.replace('{region}', settings.region as string);
  const apiBase = hosted === null ? null : (params.api_base ?? hosted).replace(/\/+$/, '');
  return {
    provider,
    apiBase,
    credentials: config.info.aws === true ? resolveAwsCredentials(params, env) : resolveCredentials(provider, params.api_key, apiBase, env),
    timeouts: resolveTimeouts(params),
    settings,
    dropParams: params.drop_params ?? dropParams,
    responsesApi: params.responses_api ?? false,
    connectTo: null,
  };
}

const ENV_REF = 'os.environ/';
const NOT_REQUIRED: Credentials = Object.freeze({ kind: 'not_required' });
const AWS_CHAIN: Credentials = Object.freeze({ kind: 'aws_chain' });

/**
 * CONTRACT.md, Config file: an `api_key` is a literal or `os.environ/NAME`
 * (missing while NAME is unset or empty). With none, a hosted provider reads
 * its usual variable (OPENAI_API_KEY, AZURE_API_KEY, ANTHROPIC_API_KEY),
 * except an `openai` deployment at a base URL of its own (a self-hosted
 * vLLM, TGI, Ollama or LM Studio), which is called without credentials.
 */
function resolveCredentials(provider: ProviderName, apiKey: string | undefined, apiBase: string | null, env: Env): Credentials {
  const { keyVariable, apiBase: hosted, keylessAtOwnBase } = PROVIDER_CONFIGS[provider].info;
  if (keyVariable === null) return NOT_REQUIRED;
  if (apiKey === undefined) return keylessAtOwnBase && apiBase !== hosted ? NOT_REQUIRED : fromVariable(keyVariable, env);
  if (apiKey.startsWith(ENV_REF)) return fromVariable(apiKey.slice(ENV_REF.length), env);
  return Object.freeze({ kind: 'key', key: apiKey, source: 'literal' });
}

/**
 * Bedrock's credentials (CONTRACT.md, Native providers): an `api_key` is a Bedrock API key
 * (bearer); else `aws_access_key_id` and `aws_secret_access_key` (with `aws_session_token`), each
 * a literal or `os.environ/NAME`; else the environment as the AWS SDK reads it:
 * `AWS_BEARER_TOKEN_BEDROCK` first (the SDK prefers it when set), then `AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`. A session token from the environment goes
 * only with keys from the environment. With neither key variable set, the standard AWS
 * credential chain at call time (`aws_chain`: web identity, container credentials, profiles,
 * instance metadata; workers/providers/bedrock/chain.ts); one of the two without the other is
 * a mistake, and stays `missing` the other.
 */
function resolveAwsCredentials(params: Partial<ParamsInput>, env: Env): Credentials {
  if (params.api_key !== undefined) return resolveCredentials('bedrock', params.api_key, null, env);
  const id = params.aws_access_key_id as string | undefined;
  const secret = params.aws_secret_access_key as string | undefined;
  if (id !== undefined || secret !== undefined) {
    const token = params.aws_session_token as string | undefined;
    return awsKeys(secretOf(id, 'AWS_ACCESS_KEY_ID', env), secretOf(secret, 'AWS_SECRET_ACCESS_KEY', env), token === undefined ? null : secretOf(token, 'AWS_SESSION_TOKEN', env));
  }
  if (env.AWS_BEARER_TOKEN_BEDROCK) return fromVariable('AWS_BEARER_TOKEN_BEDROCK', env);
  if (!env.AWS_ACCESS_KEY_ID && !env.AWS_SECRET_ACCESS_KEY) return AWS_CHAIN;
  const token = env.AWS_SESSION_TOKEN ? secretOf(undefined, 'AWS_SESSION_TOKEN', env) : null;
  return awsKeys(secretOf(undefined, 'AWS_ACCESS_KEY_ID', env), secretOf(undefined, 'AWS_SECRET_ACCESS_KEY', env), token);
}

/** One AWS credential: a literal, an `os.environ/NAME` reference, or (none given) the standard variable. */
function secretOf(value: string | undefined, standard: string, env: Env): { value: string; source: string } | { missing: string } {
  if (value !== undefined && !value.startsWith(ENV_REF)) return { value, source: 'literal' };
  const variable = value === undefined ? standard : value.slice(ENV_REF.length);
  const read = env[variable];
  return read ? { value: read, source: variable } : { missing: variable };
}

type Secret = ReturnType<typeof secretOf>;

function awsKeys(id: Secret, secret: Secret, token: Secret | null): Credentials {
  if ('missing' in id) return Object.freeze({ kind: 'missing', variable: id.missing });
  if ('missing' in secret) return Object.freeze({ kind: 'missing', variable: secret.missing });
  if (token !== null && 'missing' in token) return Object.freeze({ kind: 'missing', variable: token.missing });
  return Object.freeze({ kind: 'aws', accessKeyId: id.value, secretAccessKey: secret.value, sessionToken: token?.value ?? null, source: id.source });
}

function fromVariable(variable: string, env: Env): Credentials {
  const key = env[variable];
  return Object.freeze(key ? { kind: 'key', key, source: variable } : { kind: 'missing', variable });
}

function resolveTimeouts(params: Partial<ParamsInput>): Timeouts {
  const ms = (s: number | undefined, fallback: number) => (s === undefined ? fallback : Math.round(s * 1000));
  const totalMs = ms(params.timeout, DEFAULTS.timeouts.totalMs);
  return Object.freeze({
    connectMs: ms(params.connect_timeout, Math.min(DEFAULTS.timeouts.connectMs, totalMs)),
    headersMs: ms(params.headers_timeout, totalMs),
    idleMs: ms(params.idle_timeout, totalMs),
    totalMs,
  });
}

function pickDefined(env: Env, keys: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const value = env[key];
    if (value !== undefined && value !== '') out[key] = value;
  }
  return out;
}

/** zod issues as `path.inside.file: problem; …`. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('');
      return `${path || '(top level)'}: ${issue.message}`;
    })
    .join('; ');
}
