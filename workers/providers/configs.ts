/**
 * The config registry: one line per provider, its folder's config.ts
 * (what the config loader reads: its defaults, key variable and params).
 * The adapters' registry, what worker threads call, is index.ts; both are
 * keyed by protocol/providers.ts's names, so the compiler asks for a line
 * in each when a name is added.
 */
import type { ProviderName } from '../../protocol/providers.js';
import type { ProviderConfig } from './config.js';
import { openaiConfig } from './openai/config.js';
import { azureConfig } from './azure/config.js';
import { anthropicConfig } from './anthropic/config.js';
import { geminiConfig } from './gemini/config.js';
import { bedrockConfig } from './bedrock/config.js';
import { mockConfig } from './mock/config.js';

export const PROVIDER_CONFIGS: Readonly<Record<ProviderName, ProviderConfig>> = {
  openai: openaiConfig,
  azure: azureConfig,
  anthropic: anthropicConfig,
  gemini: geminiConfig,
  bedrock: bedrockConfig,
  mock: mockConfig,
};
