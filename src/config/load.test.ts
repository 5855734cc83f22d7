/**
 * Config loading (CONTRACT.md: Environment, Config file): validation with
 * messages that name file, path and problem; LiteLLM configs that load with a
 * warning per unsupported key; precedence defaults < file < environment;
 * gateway keys; the embedded demo; immutability of the result.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, loadConfig, parseConfig, type GatewayConfig } from './load.js';
import { availableCpus } from './cpu-limit.js';
import { workersForCpus } from './workers.js';

const SOURCE = 'conf/gateway.yaml';

/** The example of CONTRACT.md, "Config file (YAML)", verbatim. */
const CONTRACT_EXAMPLE = `
model_list:                      # aliases: enumerated by /v1/models and routable
  - model_name: fast-chat        # the alias callers send as "model"
    params:                      # \`litellm_params\` is accepted as a synonym
      model: openai/gpt-4o-mini  # <provider>/<upstream model id>
      api_base: http://127.0.0.1:9000/v1   # optional: the provider's default otherwise
      api_key: os.environ/OPENAI_API_KEY   # env reference, or a literal
      timeout: 600               # seconds, optional
  - model_name: local-embed
    params: { model: mock/embed-small }    # built-in mock provider: no key needed
route_rules:                     # enable provider-qualified names, e.g. "openai/gpt-4.1"
  - provider: openai
    models: ["gpt-4*", "o3*"]    # globs on the upstream id; default ["*"]
    params: { api_base: http://127.0.0.1:9000/v1, api_key: os.environ/OPENAI_API_KEY }
limits:
  max_request_body_bytes: 8388608
  max_response_body_bytes: 67108864
`;

/** A LiteLLM proxy config.yaml as people write them, with keys Switchyard does not support. */
const LITELLM_CONFIG = `
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/OPENAI_API_KEY
      rpm: 600
      tpm: 100000
    model_info:
      id: gpt4o-primary
      mode: chat
  - model_name: azure-gpt-35
    litellm_params:
      model: openai/gpt-35-turbo
      api_base: https://example-resource.openai.azure.com/openai/
      api_version: "2024-02-15-preview"
      api_key: os.environ/AZURE_API_KEY
      timeout: 30
litellm_settings:
  drop_params: true
  num_retries: 3
  request_timeout: 600
general_settings:
  master_key: sk-1234
  database_url: postgresql://user:pass@localhost:5432/litellm
router_settings:
  routing_strategy: simple-shuffle
  num_retries: 2
`;

/** Throws if `fn` does not throw a ConfigError; returns its message. */
function configError(fn: () => unknown): string {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown, 'expected a ConfigError to be thrown').toBeInstanceOf(ConfigError);
  return (thrown as ConfigError).message;
}

/** True when `text` mentions `key` as a whole key path (not as part of a longer one). */
function namesKey(text: string, key: string): boolean {
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\w.\\]])${escaped}(?![\\w.\\[])`).test(text);
}

function deepFrozen(value: unknown, path = 'config'): string[] {
  if (value === null || typeof value !== 'object') return [];
  const notFrozen: string[] = Object.isFrozen(value) ? [] : [path];
  for (const [key, child] of Object.entries(value)) notFrozen.push(...deepFrozen(child, `${path}.${key}`));
  return notFrozen;
}

function alias(config: GatewayConfig, name: string) {
  const found = config.routing.aliases.filter((a) => a.alias === name);
  expect(found, `alias ${name}`).toHaveLength(1);
  return found[0]!;
}

describe('the CONTRACT.md example config', () => {
  const env = { OPENAI_API_KEY: 'sk-from-env-123', GATEWAY_API_KEY: 'gw-key' };

  it('loads without errors or warnings and names its source', () => {
    const config = parseConfig(CONTRACT_EXAMPLE, SOURCE, env);
    expect(config.source).toBe(SOURCE);
    expect(config.warnings).toEqual([]);
    expect(config.routing.aliases.map((a) => a.alias)).toEqual(['fast-chat', 'local-embed']);
    expect(config.maxRequestBodyBytes).toBe(8388608);
    expect(config.routing.maxResponseBodyBytes).toBe(67108864);
  });

  it('resolves an openai alias: provider, upstream id, api_base, timeouts in ms, key from the env passed', () => {
    expect(process.env.OPENAI_API_KEY_SWITCHYARD_TEST).toBeUndefined();
    const yaml = CONTRACT_EXAMPLE.replaceAll('OPENAI_API_KEY', 'OPENAI_API_KEY_SWITCHYARD_TEST');
    const config = parseConfig(yaml, SOURCE, { OPENAI_API_KEY_SWITCHYARD_TEST: 'sk-from-env-123' });
    const fast = alias(config, 'fast-chat');
    expect(fast.provider).toBe('openai');
    expect(fast.upstreamModel).toBe('gpt-4o-mini');
    expect(fast.apiBase).toBe('http://127.0.0.1:9000/v1');
    expect(fast.timeouts.totalMs).toBe(600_000);
    expect(fast.timeouts.headersMs).toBe(600_000);
    expect(fast.timeouts.idleMs).toBe(600_000);
    expect(fast.timeouts.connectMs).toBe(DEFAULTS.timeouts.connectMs);
    expect(fast.credentials).toEqual({ kind: 'key', key: 'sk-from-env-123', source: 'OPENAI_API_KEY_SWITCHYARD_TEST' });
  });

  it('marks the key missing when the referenced variable is unset (still configured), keeping the variable name', () => {
    const config = parseConfig(CONTRACT_EXAMPLE, SOURCE, { GATEWAY_API_KEY: 'gw-key' });
    const fast = alias(config, 'fast-chat');
    expect(fast.credentials).toEqual({ kind: 'missing', variable: 'OPENAI_API_KEY' });
    expect(config.routing.rules[0]!.credentials).toEqual({ kind: 'missing', variable: 'OPENAI_API_KEY' });
  });

  it('treats an empty referenced variable as missing', () => {
    const config = parseConfig(CONTRACT_EXAMPLE, SOURCE, { OPENAI_API_KEY: '' });
    expect(alias(config, 'fast-chat').credentials).toEqual({ kind: 'missing', variable: 'OPENAI_API_KEY' });
  });

  it('mock routes need no credentials', () => {
    const config = parseConfig(CONTRACT_EXAMPLE, SOURCE, env);
    const embed = alias(config, 'local-embed');
    expect(embed.provider).toBe('mock');
    expect(embed.upstreamModel).toBe('embed-small');
    expect(embed.credentials).toEqual({ kind: 'not_required' });
    expect(embed.apiBase).toBeNull();
  });

  it('resolves route_rules with their globs and params', () => {
    const config = parseConfig(CONTRACT_EXAMPLE, SOURCE, env);
    expect(config.routing.rules).toHaveLength(1);
    const rule = config.routing.rules[0]!;
    expect(rule.provider).toBe('openai');
    expect(rule.patterns).toEqual(['gpt-4*', 'o3*']);
    expect(rule.apiBase).toBe('http://127.0.0.1:9000/v1');
    expect(rule.credentials).toEqual({ kind: 'key', key: 'sk-from-env-123', source: 'OPENAI_API_KEY' });
  });
});

describe('alias resolution details', () => {
  it('strips trailing slashes from api_base', () => {
    const config = parseConfig(
      `
model_list:
  - model_name: a
    params: { model: openai/x, api_base: "http://127.0.0.1:9000/v1/", api_key: k }
  - model_name: b
    params: { model: openai/y, api_base: "https://llm.example.com/openai//", api_key: k }
`,
      SOURCE,
      {},
    );
    expect(alias(config, 'a').apiBase).toBe('http://127.0.0.1:9000/v1');
    expect(alias(config, 'b').apiBase).toBe('https://llm.example.com/openai');
  });

  it('uses the provider default api_base when none is given', () => {
    const config = parseConfig('model_list:\n  - model_name: a\n    params: { model: openai/gpt-4.1, api_key: k }\n', SOURCE, {});
    expect(alias(config, 'a').apiBase).toBe('https://api.openai.com/v1');
    expect(alias(config, 'a').upstreamModel).toBe('gpt-4.1');
  });

  it('keeps everything after the first slash as the upstream id', () => {
    const config = parseConfig('model_list:\n  - model_name: a\n    params: { model: openai/meta-llama/Llama-3-8B, api_key: k }\n', SOURCE, {});
    expect(alias(config, 'a').provider).toBe('openai');
    expect(alias(config, 'a').upstreamModel).toBe('meta-llama/Llama-3-8B');
  });

  it('converts every timeout from seconds to milliseconds, fractions included', () => {
    const config = parseConfig(
      `
model_list:
  - model_name: a
    params: { model: openai/x, api_key: k, timeout: 2.5 }
  - model_name: b
    params: { model: openai/x, api_key: k, timeout: 30, connect_timeout: 1.5, headers_timeout: 20, idle_timeout: 7 }
  - model_name: c
    params: { model: openai/x, api_key: k }
`,
      SOURCE,
      {},
    );
    expect(alias(config, 'a').timeouts).toEqual({ connectMs: 2500, headersMs: 2500, idleMs: 2500, totalMs: 2500 });
    expect(alias(config, 'b').timeouts).toEqual({ connectMs: 1500, headersMs: 20_000, idleMs: 7000, totalMs: 30_000 });
    expect(alias(config, 'c').timeouts).toEqual(DEFAULTS.timeouts);
  });

  it('a literal api_key is a key with source "literal"', () => {
    const config = parseConfig('model_list:\n  - model_name: a\n    params: { model: openai/x, api_key: sk-literal-1 }\n', SOURCE, {});
    expect(alias(config, 'a').credentials).toEqual({ kind: 'key', key: 'sk-literal-1', source: 'literal' });
  });

  it('an openai alias at the default api_base without api_key reads OPENAI_API_KEY, and is missing while it is unset or empty', () => {
    const yaml = 'model_list:\n  - model_name: a\n    params: { model: openai/x }\n  - model_name: b\n    params: { model: openai/x, api_base: "https://api.openai.com/v1/" }\n';
    for (const env of [{}, { OPENAI_API_KEY: '' }]) {
      const config = parseConfig(yaml, SOURCE, env);
      for (const name of ['a', 'b']) expect(alias(config, name).credentials, name).toEqual({ kind: 'missing', variable: 'OPENAI_API_KEY' });
    }
    const config = parseConfig(yaml, SOURCE, { OPENAI_API_KEY: 'sk-env' });
    for (const name of ['a', 'b']) expect(alias(config, name).credentials, name).toEqual({ kind: 'key', key: 'sk-env', source: 'OPENAI_API_KEY' });
  });

  it('an openai deployment with its own api_base and no api_key needs no credentials (a self-hosted vLLM, TGI, Ollama)', () => {
    const yaml = `
model_list:
  - model_name: vllm
    params: { model: openai/meta-llama/Llama-3-8B, api_base: "http://vllm.default.svc:8000/v1" }
  - model_name: vllm-unset
    params: { model: openai/x, api_base: "http://vllm.default.svc:8000/v1", api_key: os.environ/SWITCHYARD_TEST_UNSET }
route_rules:
  - provider: openai
    params: { api_base: "http://ollama:11434/v1" }
`;
    // OPENAI_API_KEY is the hosted default's variable: a route with its own api_base does not pick it up.
    const config = parseConfig(yaml, SOURCE, { OPENAI_API_KEY: 'sk-hosted' });
    expect(alias(config, 'vllm').credentials).toEqual({ kind: 'not_required' });
    expect(config.routing.rules[0]!.credentials).toEqual({ kind: 'not_required' });
    // An api_key that references an unset variable is missing, whatever the api_base.
    expect(alias(config, 'vllm-unset').credentials).toEqual({ kind: 'missing', variable: 'SWITCHYARD_TEST_UNSET' });
  });

  it('route_rules default to models ["*"]', () => {
    const config = parseConfig('route_rules:\n  - provider: mock\n', SOURCE, {});
    expect(config.routing.rules).toHaveLength(1);
    expect(config.routing.rules[0]!.patterns).toEqual(['*']);
    expect(config.routing.rules[0]!.credentials).toEqual({ kind: 'not_required' });
  });

  it('an empty file is a valid config with no routes', () => {
    const config = parseConfig('', SOURCE, {});
    expect(config.routing.aliases).toEqual([]);
    expect(config.routing.rules).toEqual([]);
    expect(config.warnings).toEqual([]);
  });
});

describe('litellm_params is a synonym of params', () => {
  it('resolves the same route either way, without warnings', () => {
    const body = '{ model: openai/gpt-4o, api_base: "http://10.0.0.1:8000/v1/", api_key: os.environ/K, timeout: 12 }';
    const a = parseConfig(`model_list:\n  - model_name: m\n    params: ${body}\n`, SOURCE, { K: 'v' });
    const b = parseConfig(`model_list:\n  - model_name: m\n    litellm_params: ${body}\n`, SOURCE, { K: 'v' });
    expect(b.warnings).toEqual([]);
    expect(b.routing.aliases).toEqual(a.routing.aliases);
    expect(alias(b, 'm')).toMatchObject({ provider: 'openai', upstreamModel: 'gpt-4o', apiBase: 'http://10.0.0.1:8000/v1', credentials: { kind: 'key', key: 'v', source: 'K' } });
    expect(alias(b, 'm').timeouts.totalMs).toBe(12_000);
  });

  it('validates litellm_params like params, naming the litellm_params path', () => {
    const message = configError(() => parseConfig('model_list:\n  - model_name: m\n    litellm_params: { model: gpt-4 }\n', SOURCE, {}));
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'model_list[0].litellm_params.model')).toBe(true);
  });
});

describe('a real LiteLLM config.yaml', () => {
  const env = { OPENAI_API_KEY: 'sk-o', AZURE_API_KEY: 'sk-a', GATEWAY_API_KEY: 'gw' };
  // CONTRACT.md, Routing for high volume: model_info.id, router_settings and litellm_settings' num_retries,
  // fallbacks and drop_params are honoured; the rest of model_info and litellm_settings is warned about key by
  // key, and so is a provider's own param on another provider (api_version is azure's, this deployment is openai).
  // rpm and tpm are honoured (CONTRACT.md, Shared state across pods): src/config/shared-state.test.ts.
  const unsupported = [
    'model_list[0].model_info.mode',
    'model_list[1].litellm_params.api_version',
    'litellm_settings.request_timeout',
    'general_settings',
  ];

  it('loads as it is, with its supported params resolved', () => {
    const config = parseConfig(LITELLM_CONFIG, 'litellm/config.yaml', env);
    expect(config.routing.aliases.map((a) => a.alias)).toEqual(['gpt-4o', 'azure-gpt-35']);
    expect(alias(config, 'gpt-4o')).toMatchObject({ provider: 'openai', upstreamModel: 'gpt-4o', credentials: { kind: 'key', key: 'sk-o', source: 'OPENAI_API_KEY' } });
    expect(alias(config, 'azure-gpt-35')).toMatchObject({
      provider: 'openai',
      upstreamModel: 'gpt-35-turbo',
      apiBase: 'https://example-resource.openai.azure.com/openai',
      credentials: { kind: 'key', key: 'sk-a', source: 'AZURE_API_KEY' },
    });
    expect(alias(config, 'azure-gpt-35').timeouts.totalMs).toBe(30_000);
    // Its routing: the deployment id it gives, the default one, and router_settings over litellm_settings.
    expect(alias(config, 'gpt-4o').id).toBe('gpt4o-primary');
    expect(alias(config, 'azure-gpt-35').id).toBe('azure-gpt-35-0');
    expect(config.routing.router).toMatchObject({ strategy: 'simple-shuffle', numRetries: 2 });
    // litellm_settings.drop_params is every deployment's default.
    expect(config.routing.aliases.map((a) => a.dropParams)).toEqual([true, true]);
  });

  it('warns exactly once per unsupported key, each warning naming its key path', () => {
    const config = parseConfig(LITELLM_CONFIG, 'litellm/config.yaml', env);
    expect(config.warnings).toHaveLength(unsupported.length);
    for (const key of unsupported) {
      const naming = config.warnings.filter((w) => namesKey(w, key));
      expect(naming, `warnings naming ${key}: ${JSON.stringify(config.warnings)}`).toHaveLength(1);
    }
    // every warning is accounted for by exactly one key (no extra, no nested children of an unsupported block)
    for (const warning of config.warnings) {
      expect(unsupported.filter((key) => namesKey(warning, key)), warning).toHaveLength(1);
    }
  });

  it('warns about unsupported keys in route_rules, limits and server too', () => {
    const config = parseConfig(
      `
route_rules:
  - provider: openai
    fallbacks: [x]
    params: { api_key: k, rpm: 10 }
limits:
  max_request_body_bytes: 1024
  max_parallel_requests: 4
server:
  port: 9000
  log_level: debug
`,
      SOURCE,
      {},
    );
    const expected = ['route_rules[0].fallbacks', 'route_rules[0].params.rpm', 'limits.max_parallel_requests', 'server.log_level'];
    expect(config.warnings).toHaveLength(expected.length);
    for (const key of expected) expect(config.warnings.filter((w) => namesKey(w, key)), key).toHaveLength(1);
    expect(config.port).toBe(9000);
    expect(config.maxRequestBodyBytes).toBe(1024);
  });
});

describe('invalid configs throw a ConfigError naming the file, the path inside it and the problem', () => {
  const bad = (yaml: string) => configError(() => parseConfig(yaml, SOURCE, { GATEWAY_API_KEY: 'gw' }));

  it('not YAML: names the file and the line', () => {
    for (const yaml of ['model_list: [unclosed', 'model_list:\n  - model_name: a\n    params: {model: "mock/x}\n', 'a: 1\na: 2\n']) {
      const message = bad(yaml);
      expect(message).toContain(SOURCE);
      expect(message).toMatch(/YAML/);
      expect(message).toMatch(/line \d+/);
    }
  });

  it('a top level that is not a mapping', () => {
    const message = bad('- a\n- b\n');
    expect(message).toContain(SOURCE);
    expect(message).toMatch(/object|mapping/i);
  });

  it('model_list not an array', () => {
    const message = bad('model_list:\n  fast-chat: { model: openai/x }\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'model_list')).toBe(true);
    expect(message).toMatch(/array/i);
  });

  it('an entry without model_name', () => {
    const message = bad('model_list:\n  - model_name: ok\n    params: { model: mock/a }\n  - params: { model: mock/b }\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'model_list[1].model_name')).toBe(true);
  });

  it('an entry without params', () => {
    const message = bad('model_list:\n  - model_name: lonely\n');
    expect(message).toContain(SOURCE);
    expect(message).toContain('model_list[0]');
    expect(message).toMatch(/params/);
  });

  it('a model without a provider prefix', () => {
    const message = bad('model_list:\n  - model_name: a\n    params: { model: gpt-4 }\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'model_list[0].params.model')).toBe(true);
    expect(message).toMatch(/provider/);
  });

  it('an unknown provider', () => {
    const message = bad('model_list:\n  - model_name: a\n    params: { model: mock/ok }\n  - model_name: b\n    params: { model: foo/bar }\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'model_list[1].params.model')).toBe(true);
    expect(message).toMatch(/unknown provider/);
    expect(message).toContain('"foo"');
  });

  it('an unknown provider under litellm_params names the litellm_params path', () => {
    const message = bad('model_list:\n  - model_name: a\n    litellm_params: { model: foo/bar }\n');
    expect(message).toContain(SOURCE);
    expect(message).toMatch(/unknown provider/);
    expect(namesKey(message, 'model_list[0].litellm_params.model'), message).toBe(true);
  });

  it('a negative or zero timeout', () => {
    for (const [field, value] of [
      ['timeout', '-1'],
      ['timeout', '0'],
      ['connect_timeout', '-2'],
      ['idle_timeout', '"soon"'],
    ] as const) {
      const message = bad(`model_list:\n  - model_name: a\n    params: { model: openai/x, ${field}: ${value} }\n`);
      expect(message).toContain(SOURCE);
      expect(namesKey(message, `model_list[0].params.${field}`), message).toBe(true);
    }
  });

  it('an api_base that is not a URL', () => {
    for (const base of ['not a url', 'ftp://example.com/v1']) {
      const message = bad(`model_list:\n  - model_name: a\n    params: { model: openai/x, api_base: "${base}" }\n`);
      expect(message).toContain(SOURCE);
      expect(namesKey(message, 'model_list[0].params.api_base'), message).toBe(true);
      expect(message).toMatch(/url/i);
    }
  });

  it('an unknown provider in route_rules', () => {
    const message = bad('route_rules:\n  - provider: openai\n  - provider: foo\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'route_rules[1].provider')).toBe(true);
    expect(message).toMatch(/unknown provider/);
  });

  it('bad params in route_rules', () => {
    const message = bad('route_rules:\n  - provider: openai\n    params: { api_base: nope }\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'route_rules[0].params.api_base')).toBe(true);
  });

  it('limits that are not positive integers', () => {
    for (const key of ['max_request_body_bytes', 'max_response_body_bytes']) {
      for (const value of ['0', '-1', '1.5', '"8MiB"']) {
        const message = bad(`limits:\n  ${key}: ${value}\n`);
        expect(message).toContain(SOURCE);
        expect(namesKey(message, `limits.${key}`), `${key}: ${value} → ${message}`).toBe(true);
      }
    }
  });

  it('a server port out of range', () => {
    const message = bad('server:\n  port: 70000\n');
    expect(message).toContain(SOURCE);
    expect(namesKey(message, 'server.port')).toBe(true);
  });
});

describe('precedence: environment > config file > defaults', () => {
  const fileWithServer = `
server: { host: 10.1.2.3, port: 9001, workers: 3 }
limits: { max_request_body_bytes: 1000, max_response_body_bytes: 2000 }
`;

  it('defaults when neither file nor environment set anything', () => {
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEY: 'gw' });
    expect(config.host).toBe(DEFAULTS.host);
    expect(config.port).toBe(DEFAULTS.port);
    expect(config.host).toBe('0.0.0.0');
    expect(config.port).toBe(8080);
    expect(config.workerMode).toEqual({ workers: workersForCpus(availableCpus()), reason: 'cpus', cpus: availableCpus() });
    expect(config.maxRequestBodyBytes).toBe(8 * 1024 * 1024);
    expect(config.routing.maxResponseBodyBytes).toBe(64 * 1024 * 1024);
    expect(config.logLevel).toBe('info');
  });

  it('the file overrides the defaults', () => {
    const config = parseConfig(fileWithServer, SOURCE, { GATEWAY_API_KEY: 'gw' });
    expect(config.host).toBe('10.1.2.3');
    expect(config.port).toBe(9001);
    expect(config.workerMode).toEqual({ workers: 3, reason: 'config', cpus: availableCpus() });
    expect(config.maxRequestBodyBytes).toBe(1000);
    expect(config.routing.maxResponseBodyBytes).toBe(2000);
  });

  it('the environment overrides the file', () => {
    const config = parseConfig(fileWithServer, SOURCE, {
      GATEWAY_API_KEY: 'gw',
      HOST: '127.0.0.1',
      PORT: '7000',
      GATEWAY_WORKERS: '5',
      GATEWAY_MAX_BODY_BYTES: '111',
      GATEWAY_MAX_RESPONSE_BYTES: '222',
      LOG_LEVEL: 'debug',
    });
    expect(config.host).toBe('127.0.0.1');
    expect(config.port).toBe(7000);
    expect(config.workerMode).toEqual({ workers: 5, reason: 'env', cpus: availableCpus() });
    expect(config.maxRequestBodyBytes).toBe(111);
    expect(config.routing.maxResponseBodyBytes).toBe(222);
    expect(config.logLevel).toBe('debug');
  });

  it('PORT=0 (ephemeral) overrides a file port', () => {
    const config = parseConfig(fileWithServer, SOURCE, { GATEWAY_API_KEY: 'gw', PORT: '0' });
    expect(config.port).toBe(0);
  });

  it('the environment overrides the defaults without a file value', () => {
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEY: 'gw', PORT: '1234', LOG_LEVEL: 'warn', GATEWAY_MAX_BODY_BYTES: '4096' });
    expect(config.port).toBe(1234);
    expect(config.logLevel).toBe('warn');
    expect(config.maxRequestBodyBytes).toBe(4096);
  });

  it('reads only the env passed, not process.env', () => {
    expect(process.env.PORT === '4321').toBe(false);
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEY: 'gw', PORT: '4321' });
    expect(config.port).toBe(4321);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['LOG_LEVEL', 'loud'],
    ['GATEWAY_WORKERS', '257'],
    ['GATEWAY_WORKERS', '-1'],
    ['GATEWAY_WORKERS', 'many'],
    ['GATEWAY_MAX_BODY_BYTES', '0'],
    ['GATEWAY_MAX_BODY_BYTES', '1.5'],
    ['GATEWAY_MAX_RESPONSE_BYTES', '-5'],
    ['GATEWAY_MAX_RESPONSE_BYTES', '64MiB'],
  ])('a bad %s=%s throws a ConfigError naming the variable', (name, value) => {
    const message = configError(() => parseConfig('', SOURCE, { GATEWAY_API_KEY: 'gw', [name]: value }));
    expect(namesKey(message, name), message).toBe(true);
  });

  it('GATEWAY_WORKERS=0 is valid: provider calls run inline on the front thread', () => {
    expect(parseConfig('', SOURCE, { GATEWAY_API_KEY: 'gw', GATEWAY_WORKERS: '0' }).workerMode).toMatchObject({ workers: 0, reason: 'env' });
    expect(parseConfig('server: { workers: 0 }', SOURCE, { GATEWAY_API_KEY: 'gw' }).workerMode).toMatchObject({ workers: 0, reason: 'config' });
  });

  it('a blank (whitespace-only) PORT is rejected, not turned into port 0', () => {
    const message = configError(() => parseConfig('', SOURCE, { GATEWAY_API_KEY: 'gw', PORT: ' ' }));
    expect(namesKey(message, 'PORT'), message).toBe(true);
  });
});

describe('gateway API keys', () => {
  it('GATEWAY_API_KEY alone', () => {
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEY: 'sk-one' });
    expect(config.apiKeys).toEqual(['sk-one']);
    expect(config.apiKeyGenerated).toBe(false);
  });

  it('GATEWAY_API_KEYS alone, trimmed and without empties', () => {
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEYS: ' k1 ,k2,, k3 ' });
    expect([...config.apiKeys].sort()).toEqual(['k1', 'k2', 'k3']);
    expect(config.apiKeyGenerated).toBe(false);
  });

  it('GATEWAY_API_KEYS (comma list) together with GATEWAY_API_KEY, trimmed and deduplicated', () => {
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEY: ' k0 ', GATEWAY_API_KEYS: 'k1, k2 ,k1,k0,,' });
    expect(config.apiKeys).toHaveLength(3);
    expect([...config.apiKeys].sort()).toEqual(['k0', 'k1', 'k2']);
    expect(config.apiKeyGenerated).toBe(false);
  });

  it('none set: one generated key, flagged, different on every load', () => {
    const a = parseConfig('', SOURCE, {});
    const b = parseConfig('', SOURCE, {});
    expect(a.apiKeyGenerated).toBe(true);
    expect(b.apiKeyGenerated).toBe(true);
    expect(a.apiKeys).toHaveLength(1);
    expect(b.apiKeys).toHaveLength(1);
    expect(a.apiKeys[0]).toMatch(/^\S{20,}$/);
    expect(a.apiKeys[0]).not.toBe(b.apiKeys[0]);
  });

  it('blank key variables count as none set', () => {
    const config = parseConfig('', SOURCE, { GATEWAY_API_KEY: '  ', GATEWAY_API_KEYS: ' , ,' });
    expect(config.apiKeyGenerated).toBe(true);
    expect(config.apiKeys).toHaveLength(1);
    expect(config.apiKeys[0]!.trim()).not.toBe('');
  });
});

describe('loadConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-load-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('without GATEWAY_CONFIG serves the embedded demo: mock routes only, no warnings', () => {
    const config = loadConfig({});
    expect(config.source).toBe('embedded demo config');
    expect(config.warnings).toEqual([]);
    expect(config.routing.aliases.length).toBeGreaterThan(0);
    expect(config.routing.aliases.map((a) => a.alias)).toContain('demo-chat');
    for (const route of [...config.routing.aliases, ...config.routing.rules]) {
      expect(route.provider).toBe('mock');
      expect(route.credentials).toEqual({ kind: 'not_required' });
    }
  });

  it('an empty GATEWAY_CONFIG also means the demo', () => {
    expect(loadConfig({ GATEWAY_CONFIG: '' }).source).toBe('embedded demo config');
  });

  it('reads the file GATEWAY_CONFIG names and uses its path as the source', () => {
    const path = join(dir, 'gateway.yaml');
    writeFileSync(path, CONTRACT_EXAMPLE);
    const config = loadConfig({ GATEWAY_CONFIG: path, OPENAI_API_KEY: 'sk-x', GATEWAY_API_KEY: 'gw' });
    expect(config.source).toBe(path);
    expect(alias(config, 'fast-chat').credentials).toEqual({ kind: 'key', key: 'sk-x', source: 'OPENAI_API_KEY' });
  });

  it('names the file in errors from inside it', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, 'model_list:\n  - model_name: a\n    params: { model: openai/x, timeout: -1 }\n');
    const message = configError(() => loadConfig({ GATEWAY_CONFIG: path }));
    expect(message).toContain(path);
    expect(namesKey(message, 'model_list[0].params.timeout')).toBe(true);
  });

  it('a missing file is a ConfigError naming it', () => {
    const path = join(dir, 'does-not-exist.yaml');
    const message = configError(() => loadConfig({ GATEWAY_CONFIG: path }));
    expect(message).toContain(path);
  });
});

describe('immutability', () => {
  it('the returned config, its routing and every nested object are frozen', () => {
    const config = parseConfig(CONTRACT_EXAMPLE, SOURCE, { OPENAI_API_KEY: 'k', GATEWAY_API_KEYS: 'a,b' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.routing)).toBe(true);
    expect(Object.isFrozen(config.routing.aliases)).toBe(true);
    expect(Object.isFrozen(config.routing.rules)).toBe(true);
    expect(Object.isFrozen(config.apiKeys)).toBe(true);
    expect(Object.isFrozen(config.warnings)).toBe(true);
    expect(deepFrozen(config)).toEqual([]);
  });

  it('the demo config is frozen too, and writes do not take', () => {
    const config = loadConfig({});
    expect(deepFrozen(config)).toEqual([]);
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(() => {
      (config.routing.aliases as unknown as unknown[]).push({});
    }).toThrow(TypeError);
  });
});
