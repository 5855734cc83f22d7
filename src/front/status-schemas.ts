/** Shapes of the /status answers, for the agent manifest (src/front/operational.ts builds them). */
import { z } from 'zod';

export const gatewayStatusSchema = z.object({
  object: z.literal('status'),
  version: z.string(),
  uptime_seconds: z.number().int(),
  uws_native: z.boolean(),
  workers: z.number().int(),
  worker_restarts: z.number().int(),
  models_configured: z.number().int(),
  route_rules: z.number().int(),
  config_version: z.number().int(),
  requests: z.object({
    total: z.number().int(),
    in_flight: z.number().int(),
    streams_open: z.number().int(),
    success: z.number().int(),
    client_errors: z.number().int(),
    server_errors: z.number().int(),
    upstream_errors: z.number().int(),
  }),
});

/**
 * Where a deployment's provider credentials come from and whether it has them: `source` is the
 * variable, `literal`, `aws_chain` (the standard AWS credential chain, asked at call time) or
 * null when none are needed; `state` is `present`, `missing` or `not_required` for credentials
 * resolved at load, and `pending` (not asked yet), `ok` or `failed` for the chain's. Never a key.
 */
export const deploymentCredentialsSchema = z.object({
  source: z.string().nullable(),
  state: z.enum(['present', 'missing', 'not_required', 'pending', 'ok', 'failed']),
  /** The chain's credentials expire then; null otherwise. */
  expires_at: z.string().nullable(),
  /** The chain only: the SDK provider that produced its credentials (`fromTokenFile`, ...); null otherwise. */
  sdk_provider: z.string().nullable(),
  /** The chain only: why it gave none, naming the sources it tried; null otherwise. */
  error: z.string().nullable(),
});

/** A deployment with server_metrics: its server's figures as last scraped and its prefix index's size (CONTRACT.md, Inference-aware routing). */
export const inferenceFiguresSchema = z.object({
  waiting: z.number().int().nullable(),
  running: z.number().int().nullable(),
  kv_cache: z.number().nullable(),
  metrics_age_ms: z.number().int().nullable(),
  prefix_index_entries: z.number().int(),
});

/**
 * A deployment with `rpm` or `tpm` (CONTRACT.md, Shared state across pods): its limits and what this pod
 * admitted within the window now (with a redis_url the fleet's budget is shared; these are the pod's own calls).
 */
export const deploymentLimitsSchema = z.object({
  rpm: z.number().int().nullable(),
  tpm: z.number().int().nullable(),
  window_s: z.number(),
  requests_in_window: z.number().int(),
  tokens_in_window: z.number().int(),
  /** Calls a limit kept from this deployment since the pod started (skipped to another, or answered 429). */
  refused_total: z.number().int(),
});

/** One deployment of an alias with its live routing state (CONTRACT.md, Routing for high volume). */
export const deploymentStatusSchema = z.object({
  id: z.string(),
  provider: z.string(),
  upstream_model: z.string(),
  /** The origin only. */
  api_base: z.string().nullable(),
  weight: z.number(),
  order: z.number().int(),
  state: z.enum(['healthy', 'cooling_down', 'half_open']),
  cooldown_remaining_ms: z.number().int(),
  backoff_remaining_ms: z.number().int(),
  in_flight: z.number().int(),
  latency_ewma_ms: z.number().nullable(),
  failures_last_minute: z.number().int(),
  last_error: z.object({ code: z.string(), status: z.number().int(), at: z.string() }).nullable(),
  credentials: deploymentCredentialsSchema,
  /** Only on a deployment with server_metrics. */
  inference: inferenceFiguresSchema.optional(),
  /** Only on a deployment with rpm or tpm. */
  limits: deploymentLimitsSchema.optional(),
});

/**
 * A `model_list` entry with `replicas` (CONTRACT.md, Inference-aware routing): each replica, which is
 * also one of `deployments` (id `<entry id>/<host:port>`). The load figures come from the replica's
 * `/metrics` (`server_metrics`); null when it is not scraped or not read yet.
 */
export const replicaSetStatusSchema = z.object({
  /** The entry's id. */
  id: z.string(),
  source: z.enum(['list', 'dns']),
  /** `dns` only: the name resolved and how its resolution goes (`failing`: the last good answer is kept). */
  dns: z
    .object({
      host: z.string(),
      state: z.enum(['resolving', 'ok', 'failing']),
      resolved_at: z.string().nullable(),
      error: z.string().nullable(),
    })
    .nullable(),
  replicas: z.array(
    z.object({
      /** `host:port` (`[v6]:port`). */
      address: z.string(),
      /** Its deployment id. */
      deployment: z.string(),
      state: z.enum(['healthy', 'cooling_down', 'half_open']),
      in_flight: z.number().int(),
      cooldown_remaining_ms: z.number().int(),
      waiting: z.number().nullable(),
      running: z.number().nullable(),
      kv_cache: z.number().nullable(),
      metrics_age_ms: z.number().nullable(),
      prefix_index_entries: z.number().int().nullable(),
    }),
  ),
});

export const modelStatusSchema = z.object({
  alias: z.string(),
  provider: z.string(),
  upstream_model: z.string(),
  api_base: z.string().nullable(),
  /**
   * `not_required`: the mock provider, or an `openai` deployment with its own api_base and no api_key (called without credentials);
   * `aws_chain`: a bedrock deployment on the standard AWS credential chain (its deployment's `credentials` says whether it has produced them).
   */
  credentials: z.enum(['present', 'missing', 'not_required', 'aws_chain']),
  credentials_source: z.string().nullable(),
  routable: z.boolean(),
  routing_strategy: z.enum(['simple-shuffle', 'least-busy', 'latency-based-routing', 'inference-aware']),
  fallbacks: z.array(z.string()),
  deployments: z.array(deploymentStatusSchema),
  /** The alias's entries with `replicas`; empty when it has none. */
  replica_sets: z.array(replicaSetStatusSchema),
});

export type ModelStatus = z.infer<typeof modelStatusSchema>;
export type DeploymentCredentials = z.infer<typeof deploymentCredentialsSchema>;
export type DeploymentLimitsStatus = z.infer<typeof deploymentLimitsSchema>;
export type ReplicaSetStatus = z.infer<typeof replicaSetStatusSchema>;

export const modelStatusListSchema = z.object({ object: z.literal('list'), data: z.array(modelStatusSchema) });
