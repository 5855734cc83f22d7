/**
 * Each provider's own `params` keys (its piece of the config schema) and
 * how they become its settings (protocol/providers.ts), defaults included.
 * One entry per provider; src/config/schema.ts merges the pieces into the
 * params schema, so a key is validated wherever it is written and warned
 * about when the deployment's provider does not read it.
 */
import { z } from 'zod';
import type { ProviderName, ProviderSettingsMap } from '../../protocol/providers.js';

interface ParamsPiece<P extends ProviderName> {
  readonly shape: z.ZodRawShape;
  /**
   * The settings from the validated params (a key of the piece's shape is of its type, or absent)
   * and the environment; throws an Error whose message names the param when they cannot be made.
   */
  settings(params: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>): ProviderSettingsMap[P];
}

/** An API version as Azure and Anthropic write them (`2024-10-21`, `2025-04-01-preview`): it goes into a query or header. */
const apiVersion = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/, 'must be an API version such as "2024-10-21"');

/** An AWS region (`us-east-1`, `eu-central-2`, `us-gov-west-1`): it goes into a host name and the SigV4 scope. */
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;

/** An AWS credential: a literal or `os.environ/NAME`, as `api_key` (src/config/load.ts resolves it). */
const awsSecret = z.string().min(1).optional();

export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

const MOCK_DEFAULTS = { latencyMs: 0, streamChunks: 8, chunkIntervalMs: 0, embeddingDimensions: 16 } as const;

export const PROVIDER_PARAMS: { readonly [P in ProviderName]: ParamsPiece<P> } = {
  openai: { shape: {}, settings: () => ({}) },
  azure: {
    shape: { api_version: apiVersion.optional() },
    settings: (p) => ({ apiVersion: (p.api_version as string | undefined) ?? DEFAULT_AZURE_API_VERSION }),
  },
  anthropic: {
    shape: { anthropic_version: apiVersion.optional() },
    settings: (p) => ({ anthropicVersion: (p.anthropic_version as string | undefined) ?? DEFAULT_ANTHROPIC_VERSION }),
  },
  bedrock: {
    // The credentials are resolved with `api_key` (src/config/load.ts): they are Credentials, not settings.
    shape: {
      aws_access_key_id: awsSecret,
      aws_secret_access_key: awsSecret,
      aws_session_token: awsSecret,
      aws_region_name: z.string().regex(AWS_REGION, 'must be an AWS region such as "us-east-1"').optional(),
    },
    settings: (p, env) => {
      const region = (p.aws_region_name as string | undefined) ?? env.AWS_REGION;
      if (region === undefined || region === '') throw new Error('aws_region_name: bedrock needs a region (aws_region_name, or AWS_REGION in the environment)');
      if (!AWS_REGION.test(region)) throw new Error(`aws_region_name: AWS_REGION "${region}" is not an AWS region such as "us-east-1"`);
      return { region };
    },
  },
  // Knobs so that demos and load tests can model a real provider.
  mock: {
    shape: {
      mock_latency_ms: z.number().int().nonnegative().optional(),
      mock_stream_chunks: z.number().int().positive().max(100_000).optional(),
      mock_chunk_interval_ms: z.number().int().nonnegative().optional(),
      mock_embedding_dimensions: z.number().int().positive().max(65_536).optional(),
      /** Fault injection for resilience tests and demos: `crash` throws asynchronously in the worker, `exit` ends the worker thread. */
      mock_fault: z.enum(['none', 'crash', 'exit']).optional(),
    },
    settings: (p) => ({
      latencyMs: (p.mock_latency_ms as number | undefined) ?? MOCK_DEFAULTS.latencyMs,
      streamChunks: (p.mock_stream_chunks as number | undefined) ?? MOCK_DEFAULTS.streamChunks,
      chunkIntervalMs: (p.mock_chunk_interval_ms as number | undefined) ?? MOCK_DEFAULTS.chunkIntervalMs,
      embeddingDimensions: (p.mock_embedding_dimensions as number | undefined) ?? MOCK_DEFAULTS.embeddingDimensions,
      fault: (p.mock_fault as 'none' | 'crash' | 'exit' | undefined) ?? 'none',
    }),
  },
};

/** Every provider's keys in one shape, for the params schema. */
export const providerParamsShape: z.ZodRawShape = Object.assign({}, ...Object.values(PROVIDER_PARAMS).map((piece) => piece.shape));

/** The keys of other providers' pieces set on a deployment of `provider`: read by none, so warned about. */
export function foreignParamKeys(provider: ProviderName, params: object): string[] {
  const own = PROVIDER_PARAMS[provider].shape;
  return Object.keys(params).filter((key) => Object.hasOwn(providerParamsShape, key) && !Object.hasOwn(own, key));
}
