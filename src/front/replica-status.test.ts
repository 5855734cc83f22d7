/**
 * The `replica_sets` of /status/models/{alias}: each replica with its state from the shared
 * deployment state, and the load figures of the injected source (the inference scraper's) by
 * deployment id, null where it has none.
 */
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { DeploymentStates } from '../../protocol/deployment-state.js';
import { groupsOf } from '../../protocol/routing-groups.js';
import { parseConfig } from '../config/load.js';
import { DeploymentSlots } from '../supervisor/deployment-slots.js';
import { ReplicaDns } from '../supervisor/replica-dns.js';
import { replicaSetsStatus, noInferenceFigures } from './replica-status.js';
import { replicaSetStatusSchema } from './status-schemas.js';

const { routing: loaded } = parseConfig(
  `model_list:
  - model_name: llama
    params: { model: openai/l, replicas: ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"] }
    model_info: { id: pool }
  - model_name: llama
    params: { model: openai/l, api_base: "http://10.0.0.9:8000/v1" }
    model_info: { id: single }
`,
  'status.yaml',
  { GATEWAY_API_KEY: 'k' },
);

describe('replicaSetsStatus', () => {
  const slots = new DeploymentSlots(loaded.aliases.length, 1);
  const routing = slots.assign(loaded);
  const group = groupsOf(routing).get('llama');
  if (!group) throw new Error('no group');
  const replicas = new ReplicaDns(pino({ level: 'silent' }), () => undefined);

  it('lists each replica of each entry with replicas, its state, and null figures without a scraper', () => {
    // The second replica failed a call as a worker records it (429: cooled at once).
    const worker = new DeploymentStates(slots.memory, 0);
    const slot = routing.slots[1] as number;
    const kind = worker.reserve(slot, Date.now(), 0);
    worker.fail(slot, kind, { code: 'rate_limited', status: 429, coolNow: true, cooldownMs: 30_000, allowedFails: 3, lone: false }, Date.now());
    worker.release(slot, kind);
    const sets = replicaSetsStatus(group, { states: slots.states, replicas, inferenceFigures: noInferenceFigures }, Date.now());
    expect(sets.map((set) => replicaSetStatusSchema.parse(set))).toEqual(sets);
    expect(sets).toHaveLength(1);
    expect(sets[0]).toMatchObject({ id: 'pool', source: 'list', dns: null });
    expect(sets[0]?.replicas.map((r) => [r.address, r.deployment, r.state, r.waiting, r.kv_cache])).toEqual([
      ['10.0.0.1:8000', 'pool/10.0.0.1:8000', 'healthy', null, null],
      ['10.0.0.2:8000', 'pool/10.0.0.2:8000', 'cooling_down', null, null],
    ]);
  });

  it("takes each replica's figures from the injected source, by deployment id", () => {
    const asked: string[] = [];
    const figures = (id: string) => {
      asked.push(id);
      return id.endsWith('10.0.0.2:8000') ? { waiting: 3, running: 8, kv_cache: 0.42, metrics_age_ms: 120, prefix_index_entries: 977 } : null;
    };
    const [set] = replicaSetsStatus(group, { states: slots.states, replicas, inferenceFigures: figures }, Date.now());
    expect(asked).toEqual(['pool/10.0.0.1:8000', 'pool/10.0.0.2:8000']);
    expect(set?.replicas.map((r) => [r.waiting, r.running, r.kv_cache, r.metrics_age_ms, r.prefix_index_entries])).toEqual([
      [null, null, null, null, null],
      [3, 8, 0.42, 120, 977],
    ]);
  });
});
