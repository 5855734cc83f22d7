/**
 * The `bedrock` provider's config (workers/providers/config.ts): the region
 * (`aws_region_name`, else `AWS_REGION`), which makes the default api_base,
 * and the AWS credential params, which the config loader resolves into
 * the route's Credentials (src/config/load.ts), not into settings.
 */
import type { ProviderConfig } from '../config.js';

export interface BedrockSettings {
  /** The signing region and the default api_base's (`aws_region_name`, else `AWS_REGION`). */
  readonly region: string;
}

/** An AWS region (`us-east-1`, `eu-central-2`, `us-gov-west-1`): it goes into a host name and the SigV4 scope. */
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;

export const bedrockConfig: ProviderConfig<BedrockSettings> = {
  info: { apiBase: 'https://bedrock-runtime.{region}.amazonaws.com', keyVariable: 'AWS_BEARER_TOKEN_BEDROCK', keylessAtOwnBase: false, responsesApi: false, aws: true },
  params: (z) => ({
    // A literal or `os.environ/NAME`, as `api_key`.
    aws_access_key_id: z.string().min(1).optional(),
    aws_secret_access_key: z.string().min(1).optional(),
    aws_session_token: z.string().min(1).optional(),
    aws_region_name: z.string().regex(AWS_REGION, 'must be an AWS region such as "us-east-1"').optional(),
  }),
  settings: (p, env) => {
    const region = (p.aws_region_name as string | undefined) ?? env.AWS_REGION;
    if (region === undefined || region === '') throw new Error('aws_region_name: bedrock needs a region (aws_region_name, or AWS_REGION in the environment)');
    if (!AWS_REGION.test(region)) throw new Error(`aws_region_name: AWS_REGION "${region}" is not an AWS region such as "us-east-1"`);
    return { region };
  },
};
