/** params.responses_api (issue 24, point 1): Switchyard's key saying an upstream serves POST /responses itself. */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from './load.js';

const load = (yaml: string) => parseConfig(yaml, 'cfg.yaml', {});

describe('params.responses_api', () => {
  it('an openai deployment or rule may say so; it is off by default, and no unsupported-key warning is given', () => {
    const config = load(`
model_list:
  - model_name: passed
    params: { model: openai/gpt-4.1, api_key: k, responses_api: true }
  - model_name: translated
    params: { model: openai/gpt-4.1, api_key: k }
route_rules:
  - provider: openai
    params: { api_key: k, responses_api: true }
`);
    expect(config.routing.aliases.map((a) => [a.alias, a.responsesApi])).toEqual([
      ['passed', true],
      ['translated', false],
    ]);
    expect(config.routing.rules[0]?.responsesApi).toBe(true);
    expect(config.warnings).toEqual([]);
  });

  it('refused, naming the path and the providers that can, where the provider has no Responses API', () => {
    expect(() => load('model_list:\n  - model_name: m\n    params: { model: mock/x, responses_api: true }\n')).toThrow(
      new ConfigError('cfg.yaml: model_list[0].params.responses_api: the "mock" provider has no Responses API to pass through to (only "openai" can)'),
    );
    expect(() => load('model_list:\n  - model_name: m\n    params: { model: openai/x, responses_api: "yes" }\n')).toThrow(/model_list\[0\]\.params\.responses_api/);
  });
});
