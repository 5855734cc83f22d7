/**
 * Every provider's own `params` keys in one shape, for the params schema
 * (src/config/schema.ts), built from each provider folder's config.ts
 * (workers/providers/configs.ts): a key is validated wherever it is
 * written and warned about when the deployment's provider does not read it.
 */
import { z } from 'zod';
import type { ProviderName } from '../../protocol/providers.js';
import { PROVIDER_CONFIGS } from '../../workers/providers/configs.js';

const OWN_SHAPES = Object.fromEntries(Object.entries(PROVIDER_CONFIGS).map(([name, config]) => [name, config.params(z)])) as Record<ProviderName, z.ZodRawShape>;

/** Every provider's keys in one shape. */
export const providerParamsShape: z.ZodRawShape = Object.assign({}, ...Object.values(OWN_SHAPES));

/** The keys of other providers' params set on a deployment of `provider`: read by none, so warned about. */
export function foreignParamKeys(provider: ProviderName, params: object): string[] {
  const own = OWN_SHAPES[provider];
  return Object.keys(params).filter((key) => Object.hasOwn(providerParamsShape, key) && !Object.hasOwn(own, key));
}
