/** The `openai` provider's config (workers/providers/config.ts): no params of its own. */
import type { ProviderConfig } from '../config.js';

export const openaiConfig: ProviderConfig<Record<never, never>> = {
  info: { apiBase: 'https://api.openai.com/v1', keyVariable: 'OPENAI_API_KEY', keylessAtOwnBase: true, responsesApi: true },
  params: () => ({}),
  settings: () => ({}),
};
