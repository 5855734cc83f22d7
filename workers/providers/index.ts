/** The provider registry: one line per adapter (names and defaults are in protocol/providers.ts). */
import type { ProviderName } from '../../protocol/providers.js';
import type { ProviderAdapter } from './adapter.js';
import { openaiAdapter } from './openai.js';
import { mockAdapter } from './mock.js';

export const PROVIDERS: Readonly<Record<ProviderName, ProviderAdapter>> = {
  openai: openaiAdapter,
  mock: mockAdapter,
};
