/** The provider registry: one line per provider (its folder holds everything it does; names and defaults are in protocol/providers.ts). */
import type { ProviderName } from '../../protocol/providers.js';
import type { Provider } from './adapter.js';
import { openaiProvider } from './openai/index.js';
import { azureProvider } from './azure/index.js';
import { anthropicProvider } from './anthropic/index.js';
import { bedrockProvider } from './bedrock/index.js';
import { mockProvider } from './mock/index.js';

export const PROVIDERS: Readonly<Record<ProviderName, Provider>> = {
  openai: openaiProvider,
  azure: azureProvider,
  anthropic: anthropicProvider,
  bedrock: bedrockProvider,
  mock: mockProvider,
};
