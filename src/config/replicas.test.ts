/**
 * CONTRACT.md, Inference-aware routing, Replicas, the config side: a listed
 * entry expands into one deployment per replica, id `<entry id>/<host:port>`,
 * under every strategy; a `dns` entry holds its set and no deployment until
 * an answer; such a group is never lone; every mistake names its key.
 */
import { describe, expect, it } from 'vitest';
import { groupsOf } from '../../protocol/routing-groups.js';
import { ConfigError, parseConfig } from './load.js';
import { addressOf, isDnsSet, parseDnsServer, sortAddresses, withDnsReplicas } from './replicas.js';

const env = { GATEWAY_API_KEY: 'gw' };
const parse = (yaml: string) => parseConfig(yaml, 'replicas.yaml', env);

function configError(yaml: string): string {
  try {
    parse(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

const entry = (params: string, extra = '') => `
model_list:
  - model_name: llama
    params: { model: openai/llama, ${params} }
    ${extra}
`;

describe('replicas: a list', () => {
  for (const strategy of ['simple-shuffle', 'least-busy', 'latency-based-routing'] as const) {
    it(`expands into one deployment per replica, id <entry id>/<host:port>, each at its own api_base (${strategy})`, () => {
      const { routing } = parse(`${entry('replicas: ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1/", "https://vllm.example/v1"]', 'model_info: { id: pool }')}
router_settings: { routing_strategy: ${strategy} }`);
      expect(routing.aliases.map((d) => [d.id, d.apiBase, d.connectTo, d.replica])).toEqual([
        ['pool/10.0.0.1:8000', 'http://10.0.0.1:8000/v1', null, { entry: 'pool', address: '10.0.0.1:8000' }],
        ['pool/10.0.0.2:8000', 'http://10.0.0.2:8000/v1', null, { entry: 'pool', address: '10.0.0.2:8000' }],
        ['pool/vllm.example:443', 'https://vllm.example/v1', null, { entry: 'pool', address: 'vllm.example:443' }],
      ]);
      expect(routing.router.strategy).toBe(strategy);
      expect(routing.replicaSets.map((s) => [s.entry.id, s.source])).toEqual([['pool', 'list']]);
    });
  }

  it('the default entry id is <alias>-<n>, and a keyless self-hosted server is keyless at every replica', () => {
    const { routing } = parse(entry('replicas: ["http://10.0.0.1:8000/v1", "http://[fd00::2]:8000/v1"]'));
    expect(routing.aliases.map((d) => d.id)).toEqual(['llama-0/10.0.0.1:8000', 'llama-0/[fd00::2]:8000']);
    expect(routing.aliases.map((d) => d.credentials.kind)).toEqual(['not_required', 'not_required']);
  });

  it('a group of one listed replica is not lone: its replica cools like any deployment of a larger group', () => {
    const { routing } = parse(entry('replicas: ["http://10.0.0.1:8000/v1"]'));
    const group = groupsOf(routing).get('llama');
    expect(group?.deployments).toHaveLength(1);
    expect(group?.lone).toBe(false);
    // The same entry without replicas is lone (CONTRACT.md: a group with a single deployment and no fallbacks).
    expect(groupsOf(parse(entry('api_base: "http://10.0.0.1:8000/v1"')).routing).get('llama')?.lone).toBe(true);
  });

  it('an api_base beside a list is not called, and is warned about by name', () => {
    const { routing, warnings } = parse(entry('api_base: "http://10.9.9.9/v1", replicas: ["http://10.0.0.1:8000/v1"]'));
    expect(routing.aliases.map((d) => d.apiBase)).toEqual(['http://10.0.0.1:8000/v1']);
    expect(warnings).toContain('replicas.yaml: "model_list[0].params.api_base" is not called: "model_list[0].params.replicas" lists the api_base of each replica');
  });
});

describe('replicas: dns', () => {
  it('holds the set and no deployment until an answer; dns_refresh defaults to 5 s; the port is the api_base one, explicit or the scheme default', () => {
    const { routing } = parse(`
model_list:
  - model_name: llama
    params: { model: openai/llama, api_base: "http://vllm.inference.svc:8000/v1", replicas: dns, dns_servers: ["127.0.0.1:5353", "[::1]", "10.0.0.10"] }
  - model_name: llama
    params: { model: openai/llama, api_base: "https://vllm.example/v1", replicas: dns, dns_refresh: 0.5 }
    model_info: { id: tls }
`);
    expect(routing.aliases).toEqual([]);
    const sets = routing.replicaSets.filter(isDnsSet);
    expect(sets.map((s) => [s.entry.id, s.dns])).toEqual([
      ['llama-0', { host: 'vllm.inference.svc', port: 8000, refreshMs: 5000, servers: ['127.0.0.1:5353', '[::1]:53', '10.0.0.10:53'] }],
      ['tls', { host: 'vllm.example', port: 443, refreshMs: 500, servers: [] }],
    ]);
    const group = groupsOf(routing).get('llama');
    expect(group?.deployments).toEqual([]);
    expect(group?.lone).toBe(false);
  });

  it('withDnsReplicas: one deployment per address, in config order among the other entries, connected to the address at the configured api_base', () => {
    const { routing } = parse(`
model_list:
  - model_name: llama
    params: { model: openai/llama, api_base: "http://a.example:8000/v1" }
    model_info: { id: first }
  - model_name: llama
    params: { model: openai/llama, api_base: "http://vllm.svc:8000/v1", replicas: dns }
    model_info: { id: pool }
  - model_name: other
    params: { model: mock/x }
`);
    const routed = withDnsReplicas(routing, new Map([['pool', ['fd00::1', '10.0.0.2', '10.0.0.1', '10.0.0.2']]]));
    expect(routed.aliases.map((d) => [d.id, d.apiBase, d.connectTo])).toEqual([
      ['first', 'http://a.example:8000/v1', null],
      ['pool/10.0.0.1:8000', 'http://vllm.svc:8000/v1', '10.0.0.1'],
      ['pool/10.0.0.2:8000', 'http://vllm.svc:8000/v1', '10.0.0.2'],
      ['pool/[fd00::1]:8000', 'http://vllm.svc:8000/v1', 'fd00::1'],
      ['other-0', null, null],
    ]);
    // The same answer in another order is the same config; no answer, no replica.
    expect(withDnsReplicas(routing, new Map([['pool', ['10.0.0.2', 'fd00::1', '10.0.0.1']]])).aliases.map((d) => d.id)).toEqual(routed.aliases.map((d) => d.id));
    expect(withDnsReplicas(routing, new Map()).aliases.map((d) => d.id)).toEqual(['first', 'other-0']);
  });
});

describe('replicas: every mistake names its key', () => {
  const cases: Array<[string, string, string]> = [
    ['not "dns" nor a list', 'replicas: srv', 'model_list[0].params.replicas: must be "dns" or a list of api_base URLs'],
    ['an empty list', 'replicas: []', 'model_list[0].params.replicas: must list at least one api_base URL, or be "dns"'],
    ['a bad URL', 'replicas: ["http://10.0.0.1:8000/v1", "10.0.0.2:8000"]', 'model_list[0].params.replicas[1]: must be an http(s) URL'],
    ['a URL of another scheme', 'replicas: ["ftp://10.0.0.1/v1"]', 'model_list[0].params.replicas[0]: must be an http(s) URL'],
    ['one host:port twice', 'replicas: ["http://10.0.0.1:8000/v1", "http://10.0.0.1:8000/v2"]', 'model_list[0].params.replicas[1]: 10.0.0.1:8000 is already replicas[0]'],
    ['dns_servers without dns', 'replicas: ["http://10.0.0.1/v1"], dns_servers: ["127.0.0.1"]', 'model_list[0].params.dns_servers: only meaningful with replicas: dns'],
    ['dns_refresh without dns', 'api_base: "http://a.example/v1", dns_refresh: 2', 'model_list[0].params.dns_refresh: only meaningful with replicas: dns'],
    ['a dns_server that is a name', 'api_base: "http://a.example/v1", replicas: dns, dns_servers: ["dns.example:53"]', 'model_list[0].params.dns_servers[0]: must be an IP address with an optional port'],
    ['an empty dns_servers', 'api_base: "http://a.example/v1", replicas: dns, dns_servers: []', 'model_list[0].params.dns_servers: must list at least one server'],
    ['a dns_refresh of 0', 'api_base: "http://a.example/v1", replicas: dns, dns_refresh: 0', 'model_list[0].params.dns_refresh: must be at least 0.05 (seconds)'],
    ['a dns_refresh under 0.05 s', 'api_base: "http://a.example/v1", replicas: dns, dns_refresh: 0.001', 'model_list[0].params.dns_refresh: must be at least 0.05 (seconds)'],
    ['dns on an IP address', 'api_base: "http://10.0.0.1:8000/v1", replicas: dns', 'model_list[0].params.replicas: "dns" resolves the api_base host, and 10.0.0.1 is an IP address: list the replicas instead'],
  ];
  for (const [what, params, message] of cases) {
    it(what, () => {
      expect(configError(entry(params))).toContain(`replicas.yaml: ${message}`);
    });
  }

  it('replicas on a provider that calls no server', () => {
    expect(configError(`
model_list:
  - model_name: m
    params: { model: mock/x, replicas: ["http://10.0.0.1/v1"] }
`)).toContain('model_list[0].params.replicas: provider "mock" calls no server, so it has no replicas');
  });

  it('a route rule has no replicas: the key is warned about as unsupported there', () => {
    const { warnings } = parse(`
route_rules:
  - provider: openai
    params: { api_base: "http://10.0.0.1/v1", replicas: dns }
`);
    expect(warnings).toContain('replicas.yaml: "route_rules[0].params.replicas" is not supported by Switchyard and is ignored');
  });

  it('an id that a replica has, or could have under dns, is refused', () => {
    expect(configError(`
model_list:
  - model_name: a
    params: { model: openai/x, replicas: ["http://10.0.0.1:8000/v1"] }
    model_info: { id: pool }
  - model_name: b
    params: { model: openai/x, api_base: "http://10.0.0.9/v1" }
    model_info: { id: "pool/10.0.0.1:8000" }
`)).toContain('model_list[1].model_info.id: "pool/10.0.0.1:8000" is already the id of model_list[0].params.replicas[0]');
    expect(configError(`
model_list:
  - model_name: a
    params: { model: openai/x, api_base: "http://vllm.svc:8000/v1", replicas: dns }
    model_info: { id: pool }
  - model_name: b
    params: { model: openai/x, api_base: "http://10.0.0.9/v1" }
    model_info: { id: "pool/10.0.0.3:8000" }
`)).toContain('model_list[1]: "pool/10.0.0.3:8000" could be the id of a replica of model_list[0] (replicas: dns)');
  });
});

describe('helpers', () => {
  it('addressOf: host:port with the port explicit', () => {
    expect([addressOf('http://h/v1'), addressOf('https://h/v1'), addressOf('http://[::1]:9/v1'), addressOf('http://H.Example:80/')]).toEqual(['h:80', 'h:443', '[::1]:9', 'h.example:80']);
  });
  it('parseDnsServer: IP addresses with an optional port, nothing else', () => {
    expect(['1.2.3.4', '1.2.3.4:5353', '::1', '[::1]', '[fd00::a]:53'].map(parseDnsServer)).toEqual([
      { host: '1.2.3.4', port: 53 },
      { host: '1.2.3.4', port: 5353 },
      { host: '::1', port: 53 },
      { host: '::1', port: 53 },
      { host: 'fd00::a', port: 53 },
    ]);
    expect(['dns.example', '1.2.3.4:0', '1.2.3.4:70000', '[1.2.3.4]:53', '', '1.2.3'].map(parseDnsServer)).toEqual([null, null, null, null, null, null]);
  });
  it('sortAddresses: IPv4 first, no repeats', () => {
    expect(sortAddresses(['::1', '10.0.0.2', '10.0.0.1', '::1'])).toEqual(['10.0.0.1', '10.0.0.2', '::1']);
  });
});
