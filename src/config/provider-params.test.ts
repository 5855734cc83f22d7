/**
 * The native providers in the config (CONTRACT.md, Native providers and
 * Config file): azure, anthropic and gemini deployments with their defaults, their
 * own params, their key variables, `drop_params` per deployment and in
 * `litellm_settings`, and the messages of what does not load.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, type GatewayConfig } from './load.js';

const SOURCE = 'conf/native.yaml';

function route(config: GatewayConfig, name: string) {
  const found = config.routing.aliases.find((a) => a.alias === name);
  if (!found) throw new Error(`no alias ${name}`);
  return found;
}

function refusal(yaml: string, env: Record<string, string> = {}): string {
  try {
    parseConfig(yaml, SOURCE, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the config loaded');
}

describe('azure deployments', () => {
  it('take api_version (default 2024-10-21), read AZURE_API_KEY without an api_key, and keep their api_base', () => {
    const config = parseConfig(
      `
model_list:
  - model_name: a
    params: { model: azure/gpt4o-deploy, api_base: https://res.openai.azure.com/ }
  - model_name: b
    params: { model: azure/gpt4o-deploy, api_base: https://res.openai.azure.com, api_version: 2025-04-01-preview, api_key: literal-key }
`,
      SOURCE,
      { AZURE_API_KEY: 'az-from-env' },
    );
    expect(route(config, 'a')).toMatchObject({
      provider: 'azure',
      upstreamModel: 'gpt4o-deploy',
      apiBase: 'https://res.openai.azure.com',
      settings: { apiVersion: '2024-10-21' },
      credentials: { kind: 'key', key: 'az-from-env', source: 'AZURE_API_KEY' },
      dropParams: false,
    });
    expect(route(config, 'b')).toMatchObject({ settings: { apiVersion: '2025-04-01-preview' }, credentials: { kind: 'key', key: 'literal-key', source: 'literal' } });
    expect(config.warnings).toEqual([]);
  });

  it('is missing credentials when AZURE_API_KEY is unset, even at its own api_base (only openai is keyless there)', () => {
    const config = parseConfig('model_list:\n  - model_name: a\n    params: { model: azure/d, api_base: https://res.openai.azure.com }\n', SOURCE, {});
    expect(route(config, 'a').credentials).toEqual({ kind: 'missing', variable: 'AZURE_API_KEY' });
  });

  it('needs an api_base: the message names the path', () => {
    const message = refusal('model_list:\n  - model_name: a\n    params: { model: azure/d, api_key: k }\n');
    expect(message).toContain(`${SOURCE}: model_list[0].params.api_base`);
    expect(message).toContain('azure');
  });

  it('refuses an api_version that could not be sent in a query', () => {
    const message = refusal('model_list:\n  - model_name: a\n    params: { model: azure/d, api_base: https://r.openai.azure.com, api_version: "2024-10-21&x=1" }\n');
    expect(message).toContain('model_list[0].params.api_version');
  });
});

describe('gemini deployments', () => {
  it('default to generativelanguage.googleapis.com, read GEMINI_API_KEY without an api_key (at any api_base), and warn about another provider\'s param', () => {
    const config = parseConfig(
      `
model_list:
  - model_name: flash
    params: { model: gemini/gemini-2.5-flash }
  - model_name: flash-own
    params: { model: gemini/gemini-2.5-flash, api_base: http://127.0.0.1:9/, anthropic_version: 2023-06-01 }
`,
      SOURCE,
      { GEMINI_API_KEY: 'AIza-env' },
    );
    expect(route(config, 'flash')).toMatchObject({
      provider: 'gemini',
      upstreamModel: 'gemini-2.5-flash',
      apiBase: 'https://generativelanguage.googleapis.com',
      settings: {},
      credentials: { kind: 'key', key: 'AIza-env', source: 'GEMINI_API_KEY' },
    });
    expect(route(config, 'flash-own')).toMatchObject({ apiBase: 'http://127.0.0.1:9', credentials: { source: 'GEMINI_API_KEY' } });
    expect(config.warnings).toHaveLength(1);
    expect(config.warnings[0]).toContain('model_list[1].params.anthropic_version');
    expect(config.warnings[0]).toContain('"gemini"');
  });
});

describe('anthropic deployments', () => {
  it('default to api.anthropic.com and anthropic-version 2023-06-01, read ANTHROPIC_API_KEY, and take anthropic_version', () => {
    const config = parseConfig(
      `
model_list:
  - model_name: claude
    params: { model: anthropic/claude-sonnet-4-5 }
  - model_name: claude-new
    params: { model: anthropic/claude-sonnet-4-5, anthropic_version: 2024-01-01, api_base: http://127.0.0.1:9/ }
`,
      SOURCE,
      { ANTHROPIC_API_KEY: 'sk-ant-env' },
    );
    expect(route(config, 'claude')).toMatchObject({
      provider: 'anthropic',
      upstreamModel: 'claude-sonnet-4-5',
      apiBase: 'https://api.anthropic.com',
      settings: { anthropicVersion: '2023-06-01' },
      credentials: { kind: 'key', key: 'sk-ant-env', source: 'ANTHROPIC_API_KEY' },
    });
    // At a base URL of its own it still reads its variable: a keyless anthropic endpoint is no case the contract has.
    expect(route(config, 'claude-new')).toMatchObject({ apiBase: 'http://127.0.0.1:9', settings: { anthropicVersion: '2024-01-01' }, credentials: { source: 'ANTHROPIC_API_KEY' } });
  });

  it('warns about another provider\'s param, naming it and the provider', () => {
    const config = parseConfig('model_list:\n  - model_name: c\n    params: { model: anthropic/x, api_key: k, api_version: 2024-10-21, mock_latency_ms: 5 }\n', SOURCE, {});
    expect(config.warnings).toHaveLength(2);
    expect(config.warnings[0]).toContain('model_list[0].params.api_version');
    expect(config.warnings[0]).toContain('"anthropic"');
    expect(config.warnings[1]).toContain('model_list[0].params.mock_latency_ms');
  });
});

describe('drop_params', () => {
  it('is per deployment, defaulting to litellm_settings.drop_params, and applies to route rules', () => {
    const yaml = (settings: string) => `
model_list:
  - model_name: a
    params: { model: anthropic/x, api_key: k }
  - model_name: b
    params: { model: anthropic/x, api_key: k, drop_params: false }
  - model_name: c
    params: { model: anthropic/x, api_key: k, drop_params: true }
route_rules:
  - provider: anthropic
    params: { api_key: k }
${settings}`;
    const off = parseConfig(yaml(''), SOURCE, {});
    expect(off.routing.aliases.map((a) => a.dropParams)).toEqual([false, false, true]);
    expect(off.routing.rules[0]!.dropParams).toBe(false);
    const on = parseConfig(yaml('litellm_settings: { drop_params: true }'), SOURCE, {});
    expect(on.routing.aliases.map((a) => a.dropParams)).toEqual([true, false, true]);
    expect(on.routing.rules[0]!.dropParams).toBe(true);
    expect(on.warnings).toEqual([]);
  });

  it('must be a boolean', () => {
    expect(refusal('model_list:\n  - model_name: a\n    params: { model: anthropic/x, drop_params: "yes" }\n')).toContain('model_list[0].params.drop_params');
  });
});

describe('mock deployments', () => {
  it('keep their knobs as their settings', () => {
    const config = parseConfig('model_list:\n  - model_name: m\n    params: { model: mock/x, mock_stream_chunks: 3, mock_fault: exit }\n', SOURCE, {});
    expect(route(config, 'm').settings).toEqual({ latencyMs: 0, streamChunks: 3, chunkIntervalMs: 0, embeddingDimensions: 16, fault: 'exit' });
  });
});

describe('bedrock deployments', () => {
  const one = (params: string, env: Record<string, string> = {}) => route(parseConfig(`model_list:\n  - model_name: b\n    params: { model: bedrock/anthropic.claude-x-v1:0, ${params} }\n`, SOURCE, env), 'b');

  it('take the region from aws_region_name, else AWS_REGION, and make the default api_base of it', () => {
    const fromParam = one('aws_region_name: eu-central-1, aws_access_key_id: AKIAX, aws_secret_access_key: s', { AWS_REGION: 'us-west-2' });
    expect(fromParam.settings).toEqual({ region: 'eu-central-1' });
    expect(fromParam.apiBase).toBe('https://bedrock-runtime.eu-central-1.amazonaws.com');
    const fromEnv = one('aws_access_key_id: AKIAX, aws_secret_access_key: s', { AWS_REGION: 'us-west-2' });
    expect(fromEnv.apiBase).toBe('https://bedrock-runtime.us-west-2.amazonaws.com');
    expect(one('api_base: https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com/, api_key: k', { AWS_REGION: 'us-east-1' }).apiBase).toBe('https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com');
  });

  it('without a region, or with one that is no AWS region, do not load', () => {
    expect(refusal('model_list:\n  - model_name: b\n    params: { model: bedrock/m, api_key: k }\n')).toBe(`${SOURCE}: model_list[0].params.aws_region_name: bedrock needs a region (aws_region_name, or AWS_REGION in the environment)`);
    expect(refusal('model_list:\n  - model_name: b\n    params: { model: bedrock/m, api_key: k }\n', { AWS_REGION: 'evil.example.com/x' })).toContain('aws_region_name: AWS_REGION "evil.example.com/x" is not an AWS region');
    expect(refusal('model_list:\n  - model_name: b\n    params: { model: bedrock/m, api_key: k, aws_region_name: "us-east-1.evil" }\n')).toContain('aws_region_name');
  });

  it('credentials: api_key is a Bedrock API key; aws_* params (literals or os.environ/ references) a key pair; else AWS_BEARER_TOKEN_BEDROCK, else the AWS_* variables, else the standard AWS credential chain', () => {
    const region = 'aws_region_name: us-east-1';
    expect(one(`${region}, api_key: os.environ/BR_KEY`, { BR_KEY: 'ABSK-1' }).credentials).toEqual({ kind: 'key', key: 'ABSK-1', source: 'BR_KEY' });
    expect(one(`${region}, aws_access_key_id: AKIAX, aws_secret_access_key: os.environ/SECRET, aws_session_token: os.environ/TOKEN`, { SECRET: 's3', TOKEN: 't0', AWS_SESSION_TOKEN: 'not-this' }).credentials).toEqual({
      kind: 'aws',
      accessKeyId: 'AKIAX',
      secretAccessKey: 's3',
      sessionToken: 't0',
      source: 'literal',
    });
    // A session token from the environment goes only with keys from the environment.
    expect(one(`${region}, aws_access_key_id: AKIAX, aws_secret_access_key: s`, { AWS_SESSION_TOKEN: 'env-token' }).credentials).toMatchObject({ kind: 'aws', sessionToken: null });
    expect(one(`${region}, aws_access_key_id: AKIAX, aws_secret_access_key: os.environ/UNSET`).credentials).toEqual({ kind: 'missing', variable: 'UNSET' });
    const env = { AWS_ACCESS_KEY_ID: 'ASIAENV', AWS_SECRET_ACCESS_KEY: 'envsecret', AWS_SESSION_TOKEN: 'envtoken' };
    expect(one(region, env).credentials).toEqual({ kind: 'aws', accessKeyId: 'ASIAENV', secretAccessKey: 'envsecret', sessionToken: 'envtoken', source: 'AWS_ACCESS_KEY_ID' });
    expect(one(region, { ...env, AWS_BEARER_TOKEN_BEDROCK: 'ABSK-env' }).credentials).toEqual({ kind: 'key', key: 'ABSK-env', source: 'AWS_BEARER_TOKEN_BEDROCK' });
    expect(one(region, { AWS_ACCESS_KEY_ID: 'ASIAENV' }).credentials).toEqual({ kind: 'missing', variable: 'AWS_SECRET_ACCESS_KEY' });
    expect(one(region, { AWS_SECRET_ACCESS_KEY: 'envsecret' }).credentials).toEqual({ kind: 'missing', variable: 'AWS_ACCESS_KEY_ID' });
    // Issue 33: no aws_* param and neither key variable is the chain (web identity, container credentials, profiles,
    // instance metadata), asked at call time; it holds no secret. It was `missing` AWS_ACCESS_KEY_ID before.
    expect(one(region).credentials).toEqual({ kind: 'aws_chain' });
    expect(one(region, { AWS_SESSION_TOKEN: 'lone-token', AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/token', AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/r' }).credentials).toEqual({ kind: 'aws_chain' });
    // A reference to an unset variable is still that variable missing, never the chain.
    expect(one(`${region}, aws_access_key_id: os.environ/UNSET_ID, aws_secret_access_key: os.environ/UNSET_SECRET`).credentials).toEqual({ kind: 'missing', variable: 'UNSET_ID' });
  });

  it("bedrock's params on another provider are warned about by name", () => {
    const config = parseConfig('model_list:\n  - model_name: o\n    params: { model: openai/x, api_key: k, aws_region_name: us-east-1 }\n', SOURCE, {});
    expect(config.warnings.join('\n')).toContain('aws_region_name');
  });
});
