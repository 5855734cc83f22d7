/**
 * What both threads know about each provider: its name, whether it needs a
 * key and its default base URL. The adapters themselves live in
 * workers/providers/; adding a provider adds one line here and one there.
 */

export const PROVIDER_INFO = {
  // responsesApi: the provider's upstream can serve POST /responses (params.responses_api may be set).
  openai: { needsKey: true, defaultApiBase: 'https://api.openai.com/v1', responsesApi: true },
  mock: { needsKey: false, defaultApiBase: null, responsesApi: false },
} as const satisfies Record<string, { needsKey: boolean; defaultApiBase: string | null; responsesApi: boolean }>;

export type ProviderName = keyof typeof PROVIDER_INFO;

export function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(PROVIDER_INFO, name);
}
