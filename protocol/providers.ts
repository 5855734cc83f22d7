/**
 * What both threads know about each provider: its name, whether it needs a
 * key and its default base URL. The adapters themselves live in
 * workers/providers/; adding a provider adds one line here and one there.
 */

export const PROVIDER_INFO = {
  openai: { needsKey: true, defaultApiBase: 'https://api.openai.com/v1' },
  mock: { needsKey: false, defaultApiBase: null },
} as const satisfies Record<string, { needsKey: boolean; defaultApiBase: string | null }>;

export type ProviderName = keyof typeof PROVIDER_INFO;

export function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(PROVIDER_INFO, name);
}
