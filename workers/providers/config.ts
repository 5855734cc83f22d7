/**
 * What a provider folder declares about itself for the config loader (its
 * `config.ts`): where it lives, where its key comes from, its own `params`
 * keys and the settings they become. The front thread reads these through
 * workers/providers/configs.ts to validate a config file; worker code may
 * import them too. They load nothing at run time: the params shape is built
 * from the zod the loader passes in, so importing a config never brings
 * zod into a worker thread (workers load it only for a body the hand
 * checks do not pass).
 */
import type { z } from 'zod';

export interface ProviderInfo {
  /** The hosted default; `required`: the config must name one (Azure's resource); null: no network (mock). */
  readonly apiBase: string | 'required' | null;
  /** The variable a key is read from when a deployment gives no `api_key`; null: the provider needs no key. */
  readonly keyVariable: string | null;
  /**
   * With no `api_key` at a base URL of its own, the provider is called without credentials (a
   * self-hosted vLLM, TGI or Ollama behind `openai`); otherwise it reads `keyVariable`.
   */
  readonly keylessAtOwnBase: boolean;
  /** Its upstream can serve `POST /responses`, so `params.responses_api` may be set (the Responses API is then passed through). */
  readonly responsesApi: boolean;
  /**
   * AWS credentials (bedrock): SigV4 with `aws_access_key_id` / `aws_secret_access_key` /
   * `aws_session_token` or the standard `AWS_*` variables; an `api_key` (or `keyVariable`) is a
   * bearer key instead. `apiBase` may hold `{region}`, filled from the settings' `region`.
   */
  readonly aws?: true;
}

export interface ProviderConfig<Settings extends object = object> {
  readonly info: ProviderInfo;
  /** Its own `params` keys, each optional (src/config/schema.ts merges every provider's into the params schema). */
  params(zod: typeof z): z.ZodRawShape;
  /**
   * The settings from the validated params (a key of its shape is of its type, or absent) and the
   * environment, defaults included; throws an Error whose message starts with the param's name when
   * they cannot be made.
   */
  settings(params: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>): Settings;
}

/** An API version as Azure and Anthropic write them (`2024-10-21`, `2025-04-01-preview`): it goes into a query or header. */
export const apiVersionParam = (zod: typeof z) => zod.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/, 'must be an API version such as "2024-10-21"');
