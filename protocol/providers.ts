/**
 * What both threads know about each provider (CONTRACT.md, Native
 * providers): its name, where it lives, where its key comes from, and the
 * shape of its own settings. A provider is, besides its line here, its
 * folder workers/providers/<name>/ (everything it does on the wire) and its
 * params piece in src/config/provider-params.ts (how the config file sets
 * its settings): the front thread validates the config but may not load
 * worker code, and workers never load zod for a common request, so those
 * two halves cannot share a file.
 */

export interface ProviderInfo {
  /** The hosted default; `required`: the config must name one (Azure's resource); null: no network (mock). */
  readonly apiBase: string | 'required' | null;
  /** The variable a key is read from when a deployment gives no `api_key`; null: the provider needs no key. */
  readonly keyVariable: string | null;
  /**
   * With no `api_key` at a base URL of its own, the provider is called without credentials (a
   * self-hosted vLLM, TGI or Ollama behind `openai`); otherwise it reads `keyVariable`.
   */
  readonly keylessAtOwnBase: boolean;
  /** Its upstream can serve `POST /responses`, so `params.responses_api` may be set (the Responses API is then passed through). */
  readonly responsesApi: boolean;
  /**
   * AWS credentials (Bedrock): SigV4 with `aws_access_key_id` / `aws_secret_access_key` /
   * `aws_session_token` or the standard `AWS_*` variables; an `api_key` (or `keyVariable`) is a
   * bearer key instead. `apiBase` may hold `{region}`, filled from the resolved region.
   */
  readonly aws?: true;
}

export const PROVIDER_INFO = {
  openai: { apiBase: 'https://api.openai.com/v1', keyVariable: 'OPENAI_API_KEY', keylessAtOwnBase: true, responsesApi: true },
  // Azure serves /responses too, at paths of its own that the azure adapter does not build yet: translated to chat meanwhile.
  azure: { apiBase: 'required', keyVariable: 'AZURE_API_KEY', keylessAtOwnBase: false, responsesApi: false },
  anthropic: { apiBase: 'https://api.anthropic.com', keyVariable: 'ANTHROPIC_API_KEY', keylessAtOwnBase: false, responsesApi: false },
  bedrock: { apiBase: 'https://bedrock-runtime.{region}.amazonaws.com', keyVariable: 'AWS_BEARER_TOKEN_BEDROCK', keylessAtOwnBase: false, responsesApi: false, aws: true },
  mock: { apiBase: null, keyVariable: null, keylessAtOwnBase: false, responsesApi: false },
} as const satisfies Record<string, ProviderInfo>;

export type ProviderName = keyof typeof PROVIDER_INFO;

export function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(PROVIDER_INFO, name);
}

export interface MockSettings {
  readonly latencyMs: number;
  readonly streamChunks: number;
  readonly chunkIntervalMs: number;
  readonly embeddingDimensions: number;
  /** Fault injection (tests, demos): take the worker down mid-call. */
  readonly fault: 'none' | 'crash' | 'exit';
}

export interface AzureSettings {
  /** The `api-version` query of every call (`api_version`, default 2024-10-21). */
  readonly apiVersion: string;
}

export interface AnthropicSettings {
  /** The `anthropic-version` header (`anthropic_version`, default 2023-06-01, which still takes `temperature` with `top_p`). */
  readonly anthropicVersion: string;
}

export interface BedrockSettings {
  /** The signing region and the default api_base's (`aws_region_name`, else `AWS_REGION`). */
  readonly region: string;
}

/** Each provider's own settings, resolved with their defaults by the config loader. */
export interface ProviderSettingsMap {
  readonly openai: Readonly<Record<never, never>>;
  readonly azure: AzureSettings;
  readonly anthropic: AnthropicSettings;
  readonly bedrock: BedrockSettings;
  readonly mock: MockSettings;
}

export type ProviderSettings = ProviderSettingsMap[ProviderName];
