/** The `azure` provider's config (workers/providers/config.ts): its resource is required, `api_version` its own param. */
import { apiVersionParam, type ProviderConfig } from '../config.js';

export interface AzureSettings {
  /** The `api-version` query of every call (`api_version`, default 2024-10-21). */
  readonly apiVersion: string;
}

export const DEFAULT_AZURE_API_VERSION = '2024-10-21';

export const azureConfig: ProviderConfig<AzureSettings> = {
  // Azure serves /responses too, at paths of its own that the azure adapter does not build yet: translated to chat meanwhile.
  info: { apiBase: 'required', keyVariable: 'AZURE_API_KEY', keylessAtOwnBase: false, responsesApi: false },
  params: (z) => ({ api_version: apiVersionParam(z).optional() }),
  settings: (p) => ({ apiVersion: (p.api_version as string | undefined) ?? DEFAULT_AZURE_API_VERSION }),
};
