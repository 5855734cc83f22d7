/**
 * The providers both threads know by name (CONTRACT.md, Native providers).
 * Everything else about a provider is in its folder, workers/providers/<name>/:
 * its config (defaults, key variable, params and the settings they become,
 * in config.ts, read by the front's config loader through
 * workers/providers/configs.ts) and everything it does on the wire (its
 * adapter, in index.ts, registered in workers/providers/index.ts).
 */
export const PROVIDER_NAMES = ['openai', 'azure', 'anthropic', 'gemini', 'bedrock', 'mock'] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

export function isProviderName(name: string): name is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(name);
}

/** A provider's own settings, made by its config.ts from the params: each adapter reads its own type (`settingsOf`). */
export type ProviderSettings = object;
