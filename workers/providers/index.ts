/** The adapter registry: one line per provider, what worker threads call (its folder holds everything it does; its config is in configs.ts, its name in protocol/providers.ts). */
import type { ProviderName } from '../../protocol/providers.js';
import type { Provider } from './adapter.js';
import { openaiProvider } from './openai/index.js';
import { azureProvider } from './azure/index.js';
import { anthropicProvider } from './anthropic/index.js';
import { geminiProvider } from './gemini/index.js';
import { bedrockProvider } from './bedrock/index.js';
import { mockProvider } from './mock/index.js';

export const PROVIDERS: Readonly<Record<ProviderName, Provider>> = {
  openai: openaiProvider,
  azure: azureProvider,
  anthropic: anthropicProvider,
  gemini: geminiProvider,
  bedrock: bedrockProvider,
  mock: mockProvider,
};
