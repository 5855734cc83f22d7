/**
 * What both threads know about each provider: its name, its default base URL
 * and the variable its key is read from when a route at that base URL gives
 * no `api_key` (null: the provider needs no key). The adapters themselves
 * live in workers/providers/; adding a provider adds one line here and one
 * there.
 */

export const PROVIDER_INFO = {
  // responsesApi: the provider's upstream can serve POST /responses (params.responses_api may be set).
  openai: { defaultApiBase: 'https://api.openai.com/v1', keyVariable: 'OPENAI_API_KEY', responsesApi: true },
  mock: { defaultApiBase: null, keyVariable: null, responsesApi: false },
} as const satisfies Record<string, { defaultApiBase: string | null; keyVariable: string | null; responsesApi: boolean }>;

export type ProviderName = keyof typeof PROVIDER_INFO;

export function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(PROVIDER_INFO, name);
}
