/**
 * The front's resolver of `replicas: dns` with a resolver the test answers:
 * what counts as a change, a failure and an empty answer; a reload that keeps
 * or restarts a set; a swap that failed is tried again.
 */
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { parseConfig } from '../config/load.js';
import { isDnsSet, type DnsReplicaSet, type DnsSettings } from '../config/replicas.js';
import { until } from '../../test/support/waits.js';
import { ReplicaDns } from './replica-dns.js';

function sets(host = 'vllm.svc', refresh = 0.05): DnsReplicaSet[] {
  const { routing } = parseConfig(
    `model_list:\n  - model_name: llama\n    params: { model: openai/l, api_base: "http://${host}:8000/v1", replicas: dns, dns_refresh: ${refresh} }\n    model_info: { id: pool }\n`,
    'dns.yaml',
    { GATEWAY_API_KEY: 'k' },
  );
  return routing.replicaSets.filter(isDnsSet);
}

/** A resolver whose answer the test sets: addresses, or an error to throw. */
function scripted() {
  let answer: readonly string[] | Error = [];
  const asked: DnsSettings[] = [];
  return {
    set: (next: readonly string[] | Error) => void (answer = next),
    asked,
    resolve: (settings: DnsSettings) => {
      asked.push(settings);
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
}

const log = () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
};

describe('ReplicaDns', () => {
  it('calls onChange only when the sorted answer changes; a failure or an empty answer keeps the last good one, logged once', async () => {
    const dns = scripted();
    const { logger, lines } = log();
    let changes = 0;
    const r = new ReplicaDns(logger, () => changes++, dns.resolve);
    dns.set(['10.0.0.2', '10.0.0.1']);
    r.update(sets());
    await r.firstAnswers(1000);
    expect([changes, r.status('pool')?.state, r.answersFor(sets()).get('pool')]).toEqual([1, 'ok', ['10.0.0.1', '10.0.0.2']]);
    dns.set(['10.0.0.1', '10.0.0.2']);
    const asked = dns.asked.length;
    await until(() => dns.asked.length >= asked + 3, 'three more resolutions');
    expect(changes).toBe(1);

    for (const failure of [new Error('queryA ESERVFAIL vllm.svc'), []]) {
      dns.set(failure);
      await until(() => r.status('pool')?.state === 'failing', 'failing');
      const n = dns.asked.length;
      await until(() => dns.asked.length >= n + 3, 'three more failures');
      expect(r.answersFor(sets()).get('pool')).toEqual(['10.0.0.1', '10.0.0.2']);
      dns.set(['10.0.0.1', '10.0.0.2']);
      await until(() => r.status('pool')?.state === 'ok', 'ok again');
    }
    expect(changes).toBe(1);
    expect(lines.filter((l) => l.event === 'replicas_resolve_failed').map((l) => l.error)).toEqual(['queryA ESERVFAIL vllm.svc', 'the name has no A or AAAA record']);
    expect(lines.filter((l) => l.event === 'replicas_resolve_recovered')).toHaveLength(2);
    r.stop();
  });

  it('a reload keeps the answer of a set resolved the same way, and restarts one whose name changed', async () => {
    const dns = scripted();
    const r = new ReplicaDns(log().logger, () => undefined, dns.resolve);
    dns.set(['10.0.0.1']);
    r.update(sets());
    await r.firstAnswers(1000);
    r.update(sets());
    expect(r.answersFor(sets()).get('pool')).toEqual(['10.0.0.1']);
    // Another name: no answer until it is resolved (the old one's would be wrong), and none for the old config either.
    const other = sets('other.svc');
    expect(r.answersFor(other).has('pool')).toBe(false);
    dns.set(new Error('ETIMEOUT'));
    r.update(other);
    expect(r.status('pool')?.state).toBe('resolving');
    await r.firstAnswers(1000);
    expect([r.status('pool')?.state, r.status('pool')?.addresses]).toEqual(['failing', []]);
    expect(dns.asked.at(-1)?.host).toBe('other.svc');
    r.update([]);
    expect(r.status('pool')).toBeNull();
    r.stop();
  });

  it('a swap that failed (no room for new slots) is tried again at the next answer, even an unchanged one', async () => {
    const dns = scripted();
    const { logger, lines } = log();
    let calls = 0;
    const r = new ReplicaDns(
      logger,
      () => {
        calls++;
        if (calls === 1) throw new Error('no room');
      },
      dns.resolve,
    );
    dns.set(['10.0.0.1']);
    r.update(sets());
    await until(() => calls === 2, 'the swap tried again');
    expect(lines.filter((l) => l.event === 'replicas_apply_failed')).toHaveLength(1);
    const n = dns.asked.length;
    await until(() => dns.asked.length >= n + 3, 'three more resolutions');
    expect(calls).toBe(2);
    r.stop();
  });
});
