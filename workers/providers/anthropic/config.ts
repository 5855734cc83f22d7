/** The `anthropic` provider's config (workers/providers/config.ts): `anthropic_version` its own param. */
import { apiVersionParam, type ProviderConfig } from '../config.js';

export interface AnthropicSettings {
  /** The `anthropic-version` header (`anthropic_version`, default 2023-06-01, which still takes `temperature` with `top_p`). */
  readonly anthropicVersion: string;
}

export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

export const anthropicConfig: ProviderConfig<AnthropicSettings> = {
  info: { apiBase: 'https://api.anthropic.com', keyVariable: 'ANTHROPIC_API_KEY', keylessAtOwnBase: false, responsesApi: false },
  params: (z) => ({ anthropic_version: apiVersionParam(z).optional() }),
  settings: (p) => ({ anthropicVersion: (p.anthropic_version as string | undefined) ?? DEFAULT_ANTHROPIC_VERSION }),
};
