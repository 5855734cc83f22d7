/**
 * CONTRACT.md, Routing for high volume, the config side: LiteLLM's keys
 * with their defaults, `litellm_settings` accepted too, unsupported router
 * keys warned by name, and errors that name the path for what cannot route.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, parseConfig } from './load.js';

const env = { GATEWAY_API_KEY: 'gw' };
const parse = (yaml: string) => parseConfig(yaml, 'routing.yaml', env);

function configError(yaml: string): string {
  try {
    parse(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

/** CONTRACT.md's inference_routing defaults, resolved (stale after max(2 s, 3 × 250 ms)). */
const DEFAULT_INFERENCE = { metricsIntervalMs: 250, staleAfterMs: 2_000, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 65_536 };

const TWO_GROUPS = `
model_list:
  - model_name: chat
    params: { model: mock/a, weight: 3, order: 1, max_parallel_requests: 200 }
    model_info: { id: east }
  - model_name: chat
    params: { model: mock/b }
  - model_name: chat-backup
    litellm_params: { model: mock/c }
`;

describe('routing config', () => {
  it('the defaults: simple-shuffle, 2 retries, retry_after 0, 3 allowed fails, 30 s cooldown, 10 s commit timeout, 10 s max_retry_wait, weight 1, order 1, no cap, ids <alias>-<n>', () => {
    const { routing } = parse(TWO_GROUPS);
    expect(routing.router).toEqual({
      strategy: 'simple-shuffle',
      numRetries: 2,
      retryAfterMs: 0,
      allowedFails: 3,
      cooldownMs: 30_000,
      fallbacks: [],
      contextWindowFallbacks: [],
      streamCommitTimeoutMs: 10_000,
      maxRetryWaitMs: 10_000,
      timeoutMs: null,
      limitWindowMs: 60_000,
      inference: DEFAULT_INFERENCE,
    });
    expect(routing.aliases.every((a) => a.serverMetrics === null)).toBe(true);
    expect(routing.aliases.map((a) => [a.id, a.weight, a.order, a.maxParallel])).toEqual([
      ['east', 3, 1, 200],
      ['chat-1', 1, 1, 0],
      ['chat-backup-0', 1, 1, 0],
    ]);
    expect(DEFAULTS.router.numRetries).toBe(2);
  });

  it('router_settings as LiteLLM writes them', () => {
    const { routing, warnings } = parse(`${TWO_GROUPS}
router_settings:
  routing_strategy: latency-based-routing
  num_retries: 4
  retry_after: 0.5
  allowed_fails: 5
  cooldown_time: 12
  fallbacks: [{ chat: [chat-backup] }]
  context_window_fallbacks: [{ chat: [chat-backup] }]
  stream_commit_timeout: 2.5
  max_retry_wait: 4.5
  timeout: 90
`);
    expect(warnings).toEqual([]);
    expect(routing.router).toEqual({
      strategy: 'latency-based-routing',
      numRetries: 4,
      retryAfterMs: 500,
      allowedFails: 5,
      cooldownMs: 12_000,
      fallbacks: [{ group: 'chat', to: ['chat-backup'] }],
      contextWindowFallbacks: [{ group: 'chat', to: ['chat-backup'] }],
      streamCommitTimeoutMs: 2500,
      maxRetryWaitMs: 4500,
      timeoutMs: 90_000,
      limitWindowMs: 60_000,
      inference: DEFAULT_INFERENCE,
    });
  });

  it("litellm_settings' num_retries and fallbacks route too; router_settings wins when both set one", () => {
    const only = parse(`${TWO_GROUPS}
litellm_settings: { num_retries: 1, fallbacks: [{ chat: [chat-backup] }] }
`);
    expect(only.routing.router).toMatchObject({ numRetries: 1, fallbacks: [{ group: 'chat', to: ['chat-backup'] }] });
    const both = parse(`${TWO_GROUPS}
litellm_settings: { num_retries: 1 }
router_settings: { num_retries: 0 }
`);
    expect(both.routing.router.numRetries).toBe(0);
  });

  it("LiteLLM's router keys Switchyard does not implement are warned about by name, not fatal; so is a LiteLLM-only strategy", () => {
    const { routing, warnings } = parse(`${TWO_GROUPS}
router_settings:
  routing_strategy: usage-based-routing-v2
  enable_pre_call_checks: true
  model_group_alias: { gpt-4: chat }
  model_info_unused: 1
`);
    expect(routing.router.strategy).toBe('simple-shuffle');
    for (const key of ['router_settings.enable_pre_call_checks', 'router_settings.model_group_alias', 'router_settings.model_info_unused']) {
      expect(warnings.filter((w) => w.includes(`"${key}"`)), key).toHaveLength(1);
    }
    expect(warnings.filter((w) => w.includes('usage-based-routing-v2'))).toHaveLength(1);
    expect(warnings).toHaveLength(4);
  });

  it.each([
    ['a fallback from a group that is not configured', 'router_settings: { fallbacks: [{ nope: [chat] }] }', 'router_settings.fallbacks[0]: "nope" is not a model_name'],
    ['a fallback to a group that is not configured', 'router_settings: { fallbacks: [{ chat: [chat-backup, nope] }] }', 'router_settings.fallbacks[0].chat[1]: "nope" is not a model_name'],
    ['a context-window fallback to itself', 'router_settings: { context_window_fallbacks: [{ chat: [chat] }] }', 'router_settings.context_window_fallbacks[0].chat[0]: a group cannot fall back to itself'],
    ['a litellm_settings fallback to an unknown group', 'litellm_settings: { fallbacks: [{ chat: [gone] }] }', 'litellm_settings.fallbacks[0].chat[0]: "gone" is not a model_name'],
    ['an unknown strategy', 'router_settings: { routing_strategy: fastest }', 'router_settings.routing_strategy'],
    ['a negative num_retries', 'router_settings: { num_retries: -1 }', 'router_settings.num_retries'],
    ['a zero stream_commit_timeout', 'router_settings: { stream_commit_timeout: 0 }', 'router_settings.stream_commit_timeout'],
    ['a negative max_retry_wait', 'router_settings: { max_retry_wait: -1 }', 'router_settings.max_retry_wait'],
    ['a max_retry_wait that is not a number', 'router_settings: { max_retry_wait: soon }', 'router_settings.max_retry_wait'],
  ])('%s is a config error naming its path', (_, extra, expected) => {
    const message = configError(`${TWO_GROUPS}${extra}\n`);
    expect(message).toContain('routing.yaml');
    expect(message).toContain(expected);
  });

  it.each([
    ['a zero weight', 'weight: 0', 'model_list[0].params.weight'],
    ['a fractional order', 'order: 1.5', 'model_list[0].params.order'],
    ['a zero max_parallel_requests', 'max_parallel_requests: 0', 'model_list[0].params.max_parallel_requests'],
  ])('%s is a config error naming its path', (_, param, path) => {
    expect(configError(`model_list:\n  - model_name: x\n    params: { model: mock/a, ${param} }\n`)).toContain(path);
  });

  it('deployment ids are unique (a default one included) and header-safe', () => {
    const duplicate = configError(`
model_list:
  - model_name: chat
    params: { model: mock/a }
  - model_name: other
    params: { model: mock/b }
    model_info: { id: chat-0 }
`);
    expect(duplicate).toContain('model_list[1].model_info.id: "chat-0" is already the id of model_list[0]');
    expect(configError(`model_list:\n  - model_name: x\n    params: { model: mock/a }\n    model_info: { id: "two words" }\n`)).toContain('model_list[0].model_info.id');
    // LiteLLM writes some ids as numbers.
    expect(parse(`model_list:\n  - model_name: x\n    params: { model: mock/a }\n    model_info: { id: 42 }\n`).routing.aliases[0]?.id).toBe('42');
  });

  it('route rules are not deployments: weight, order and max_parallel_requests there are warned about', () => {
    const { warnings } = parse(`
route_rules:
  - provider: mock
    params: { weight: 2, order: 1, max_parallel_requests: 3 }
`);
    expect(warnings).toHaveLength(3);
  });

  describe('inference-aware routing (CONTRACT.md, Inference-aware routing for self-hosted servers)', () => {
    const FLEET = `
model_list:
  - model_name: llama
    params: { model: openai/meta-llama/Llama-3.1-8B-Instruct, api_base: "http://10.0.0.1:8000/v1", server_metrics: vllm }
    model_info: { id: a }
  - model_name: llama
    params: { model: openai/meta-llama/Llama-3.1-8B-Instruct, api_base: "http://10.0.0.2:30000/v1", server_metrics: sglang }
    model_info: { id: b }
`;

    it('server_metrics per deployment, the strategy, and inference_routing with every key set', () => {
      const { routing, warnings } = parse(`${FLEET}
router_settings:
  routing_strategy: inference-aware
  inference_routing:
    metrics_interval_ms: 1000
    weights: { prefix: 1, queue: 0, kv_cache: 0.5 }
    queue_threshold: 8
    kv_cache_threshold: 0.9
    prefix_block_chars: 128
    prefix_index_blocks: 1024
`);
      expect(warnings).toEqual([]);
      expect(routing.aliases.map((a) => [a.id, a.serverMetrics])).toEqual([
        ['a', 'vllm'],
        ['b', 'sglang'],
      ]);
      expect(routing.router.strategy).toBe('inference-aware');
      // Stale after max(2 s, 3 periods): 3 s for a 1 s period.
      expect(routing.router.inference).toEqual({ metricsIntervalMs: 1000, staleAfterMs: 3000, weights: { prefix: 1, queue: 0, kvCache: 0.5 }, queueThreshold: 8, kvCacheThreshold: 0.9, prefixBlockChars: 128, prefixIndexBlocks: 1024 });
    });

    it('partial weights keep the other defaults; unknown keys inside inference_routing are warned about by name', () => {
      const { routing, warnings } = parse(`${FLEET}
router_settings:
  routing_strategy: inference-aware
  inference_routing: { weights: { prefix: 5, latency: 1 }, scorer: precise }
`);
      expect(routing.router.inference.weights).toEqual({ prefix: 5, queue: 2, kvCache: 2 });
      expect(warnings).toEqual([
        'routing.yaml: "router_settings.inference_routing.scorer" is not supported by Switchyard and is ignored',
        'routing.yaml: "router_settings.inference_routing.weights.latency" is not supported by Switchyard and is ignored',
      ]);
    });

    it.each([
      ['server_metrics: tgi', 'model_list[0].params.server_metrics'],
      ['metrics_interval_ms: 0', 'router_settings.inference_routing.metrics_interval_ms'],
      ['metrics_interval_ms: 2.5', 'router_settings.inference_routing.metrics_interval_ms'],
      ['weights: { queue: -1 }', 'router_settings.inference_routing.weights.queue'],
      ['weights: { prefix: 0, queue: 0, kv_cache: 0 }', 'router_settings.inference_routing.weights: at least one weight must be above 0'],
      ['queue_threshold: 0', 'router_settings.inference_routing.queue_threshold'],
      ['kv_cache_threshold: 1.5', 'router_settings.inference_routing.kv_cache_threshold'],
      ['kv_cache_threshold: 0', 'router_settings.inference_routing.kv_cache_threshold'],
      ['prefix_block_chars: "64"', 'router_settings.inference_routing.prefix_block_chars'],
      ['prefix_index_blocks: 0', 'router_settings.inference_routing.prefix_index_blocks'],
    ])('%s is refused, naming %s', (setting, named) => {
      const yaml = setting.startsWith('server_metrics')
        ? `model_list:\n  - model_name: llama\n    params: { model: openai/x, api_base: "http://10.0.0.1:8000/v1", ${setting} }\n`
        : `${FLEET}router_settings:\n  inference_routing: { ${setting} }\n`;
      expect(configError(yaml)).toContain(named);
    });

    it('server_metrics needs the deployment own api_base (a mock, or the provider default host, has no /metrics of ours)', () => {
      expect(configError('model_list:\n  - model_name: llama\n    params: { model: openai/x, server_metrics: vllm }\n')).toBe(
        "routing.yaml: model_list[0].params.server_metrics: needs the deployment's own api_base or replicas (its /metrics is read at each one's origin)",
      );
    });

    it('route rules are not deployments: server_metrics there is warned about', () => {
      const { warnings } = parse('route_rules:\n  - provider: openai\n    params: { api_base: "http://10.0.0.1:8000/v1", server_metrics: vllm }\n');
      expect(warnings).toContain('routing.yaml: "route_rules[0].params.server_metrics" is not supported by Switchyard and is ignored');
    });
  });
});
