/**
 * CONTRACT.md, Shared state across pods: `rpm`, `tpm` and the Redis keys
 * load as LiteLLM writes them, and a bad value stops the start naming the key.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from './load.js';

const model = (params: string) => `
model_list:
  - model_name: chat
    params: { model: openai/gpt-4o-mini, api_key: sk-x${params} }
`;

function configError(text: string, env: Record<string, string> = {}): string {
  try {
    parseConfig(text, 'cfg.yaml', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('rpm and tpm', () => {
  it('are read per deployment (0: none), and the window is a minute unless a test shortens it', () => {
    const config = parseConfig(`${model(', rpm: 500, tpm: 200000')}  - model_name: other\n    params: { model: mock/x }\n`, 'cfg.yaml', {});
    expect(config.routing.aliases.map((a) => [a.id, a.rpm, a.tpm])).toEqual([
      ['chat-0', 500, 200000],
      ['other-0', 0, 0],
    ]);
    expect(config.routing.router.limitWindowMs).toBe(60_000);
    expect(parseConfig(`${model('')}router_settings: { limit_window: 2 }\n`, 'cfg.yaml', {}).routing.router.limitWindowMs).toBe(2000);
    // litellm_params is a synonym: LiteLLM configs load as they are.
    expect(parseConfig('model_list:\n  - model_name: c\n    litellm_params: { model: mock/x, rpm: 7 }\n', 'cfg.yaml', {}).routing.aliases[0]?.rpm).toBe(7);
  });

  it.each([
    ['rpm: -1', 'rpm'],
    ['rpm: 0', 'rpm'],
    ['rpm: 1.5', 'rpm'],
    ['rpm: "many"', 'rpm'],
    ['tpm: -20', 'tpm'],
    ['tpm: "1k"', 'tpm'],
  ])('a bad %s stops the start naming model_list[0].params.%s', (value, key) => {
    expect(configError(model(`, ${value}`))).toContain(`cfg.yaml: model_list[0].params.${key}`);
  });
});

describe('redis_url and LiteLLM redis_host / redis_port / redis_password', () => {
  it('none: each pod keeps its limits alone', () => {
    expect(parseConfig(model(''), 'cfg.yaml', {}).sharedState).toBeNull();
  });

  it('a redis_url is kept; its password is hidden where it is shown', () => {
    const config = parseConfig(`${model('')}router_settings: { redis_url: "redis://:s3cret@redis.infra.svc:6379/0" }\n`, 'cfg.yaml', {});
    expect(config.sharedState?.url).toBe('redis://:s3cret@redis.infra.svc:6379/0');
    expect(config.sharedState?.shownUrl).toBe('redis://:***@redis.infra.svc:6379/0');
  });

  it("LiteLLM's three keys make the same URL, each may be os.environ/NAME", () => {
    const config = parseConfig(`${model('')}router_settings: { redis_host: os.environ/REDIS_HOST, redis_port: "6380", redis_password: os.environ/REDIS_PASSWORD }\n`, 'cfg.yaml', { REDIS_HOST: '10.0.0.7', REDIS_PASSWORD: 'p@ss' });
    expect(config.sharedState?.url).toBe('redis://:p%40ss@10.0.0.7:6380');
    expect(parseConfig(`${model('')}router_settings: { redis_host: localhost }\n`, 'cfg.yaml', {}).sharedState?.url).toBe('redis://localhost:6379');
  });

  it.each([
    ['redis_url: "not a url"', 'router_settings.redis_url'],
    ['redis_url: "http://redis:6379"', 'router_settings.redis_url'],
    ['redis_url: "redis://redis:6379/zero"', 'router_settings.redis_url'],
    ['redis_url: os.environ/UNSET_REDIS_URL', 'router_settings.redis_url'],
    ['redis_port: 6379', 'router_settings.redis_host'],
    ['redis_host: a, redis_port: 70000', 'router_settings.redis_port'],
    ['redis_host: a, redis_url: "redis://b:1"', 'router_settings.redis_host'],
  ])('a bad %s stops the start naming %s', (value, key) => {
    const message = configError(`${model('')}router_settings: { ${value} }\n`);
    expect(message).toContain(`cfg.yaml: ${key}`);
  });
});
