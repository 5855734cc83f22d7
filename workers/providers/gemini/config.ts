/** The `gemini` provider's config (workers/providers/config.ts): no params of its own. */
import type { ProviderConfig } from '../config.js';

export const geminiConfig: ProviderConfig<Record<never, never>> = {
  // GEMINI_API_KEY, as LiteLLM reads for gemini/ (Google's SDKs read GOOGLE_API_KEY first; one variable per provider here).
  info: { apiBase: 'https://generativelanguage.googleapis.com', keyVariable: 'GEMINI_API_KEY', keylessAtOwnBase: false, responsesApi: false },
  params: () => ({}),
  settings: () => ({}),
};
