/**
 * The fleet the Redis tests run: N real gateway processes on one config, each its own process on its
 * own port; load spread over them round-robin really reaches each, and the counting upstream behind
 * them sees every call, with the usage it answered read back by the official SDK through a pod.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, type Fleet } from './gateway-fleet.js';
import { chat } from './routing.js';
import { deploymentYaml, startScriptedUpstream, type ScriptedUpstream } from './scripted-upstream.js';
import { busiestWindow, inWindow } from './window-counts.js';
import { EARLY_MS } from './waits.js';

/** The gateway processes this process has running now (its children running dist/server.js), by pid. */
function gatewayChildren(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [, state, ppid] = /\) (\S) (\d+)/.exec(stat) ?? [];
      if (Number(ppid) === process.pid && state !== 'Z' && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('server.js')) pids.push(Number(entry));
    } catch {
      // Gone while read.
    }
  }
  return pids.sort((a, b) => a - b);
}

/** switchyard_requests_total of one pod, summed over its labels, for the alias `model`. */
async function requestsServed(pod: Fleet['pods'][number], model: string): Promise<number> {
  const text = await (await pod.fetch('/metrics')).text();
  let n = 0;
  for (const line of text.split('\n')) if (line.startsWith('switchyard_requests_total{') && line.includes(`model="${model}"`)) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  return n;
}

describe('gateway fleet', () => {
  let up: ScriptedUpstream;
  let fleet: Fleet;
  beforeAll(async () => {
    up = await startScriptedUpstream(['east']);
    fleet = await startFleet({ pods: 3, yaml: `model_list:${deploymentYaml('chat', up.at('east'))}\n` });
  });
  afterAll(async () => {
    await fleet?.stopAll();
    await up.close();
  });

  it('starts N processes, each its own pid and port, on one config', () => {
    expect(fleet.pods).toHaveLength(3);
    expect(new Set(fleet.pods.map((p) => p.proc.pid)).size).toBe(3);
    expect(new Set(fleet.pods.map((p) => p.port)).size).toBe(3);
    expect(fleet.events('listening').map((e) => e.pod).sort()).toEqual([0, 1, 2]);
    // The access lines are not kept: a load would fill memory with them.
    expect(fleet.events().some((e) => e.line.event === 'access')).toBe(false);
  });

  it('spreads requests round-robin: each pod serves its share, the upstream counts every call and its tokens', async () => {
    up.reset();
    up.at('east').usage({ prompt_tokens: 40, completion_tokens: 10 });
    const before = await Promise.all(fleet.pods.map((p) => requestsServed(p, 'chat')));
    const sent = await fleet.spread({ count: 12 }, { concurrency: 4 }, (pod) => chat(pod, 'chat'));
    expect(sent.map((s) => s.value?.status)).toEqual(Array(12).fill(200));
    expect(sent.map((s) => s.pod)).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    const after = await Promise.all(fleet.pods.map((p) => requestsServed(p, 'chat')));
    expect(after.map((n, i) => n - (before[i] as number))).toEqual([4, 4, 4]);
    const calls = up.at('east').calls();
    expect(calls).toHaveLength(12);
    expect(busiestWindow(calls, 60_000)).toMatchObject({ calls: 12, tokens: 12 * 50 });
    const first = Math.min(...sent.map((s) => s.at));
    expect(inWindow(calls, first, performance.now())).toEqual({ calls: 12, tokens: 600 });
  });

  it('the official SDK through a pod reads the usage the counting upstream answered', async () => {
    up.reset();
    up.at('east').usage((body) => ({ prompt_tokens: 9, completion_tokens: Number(body.max_tokens ?? 1) }));
    const pods = [fleet.next(), fleet.next(), fleet.next(), fleet.next()];
    expect(pods[3]).toBe(pods[0]);
    const completion = await (pods[1] as Fleet['pods'][number]).client().chat.completions.create({ model: 'chat', max_tokens: 21, messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.usage).toEqual({ prompt_tokens: 9, completion_tokens: 21, total_tokens: 30 });
    let streamed;
    for await (const chunk of await (pods[2] as Fleet['pods'][number]).client().chat.completions.create({ model: 'chat', max_tokens: 4, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] })) {
      if (chunk.usage) streamed = chunk.usage;
    }
    expect(streamed).toEqual({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 });
    expect(up.at('east').calls().map((c) => c.tokens)).toEqual([30, 13]);
  });

  it('a duration plan sends until it ends; perSecond paces an open loop; a request that throws is kept with its error', async () => {
    const t0 = performance.now();
    const paced = await fleet.spread({ count: 6 }, { concurrency: 6, perSecond: 20 }, async (pod, i) => {
      if (i === 4) throw new Error('the test threw');
      return (await chat(pod, 'chat')).status;
    });
    // Request i no sooner than i × 50 ms after the start.
    for (const s of paced) expect(s.at - t0).toBeGreaterThanOrEqual(s.index * 50 - EARLY_MS);
    expect(paced.map((s) => s.value ?? (s.error as Error).message)).toEqual([200, 200, 200, 200, 'the test threw', 200]);
    const t1 = performance.now();
    const timed = await fleet.spread({ durationMs: 300 }, { concurrency: 3 }, (pod) => chat(pod, 'chat'));
    expect(timed.length).toBeGreaterThan(3);
    expect(Math.max(...timed.map((s) => s.at)) - t1).toBeLessThan(300);
    expect(new Set(timed.map((s) => s.pod))).toEqual(new Set([0, 1, 2]));
  });

  it('addPod grows the fleet on the same config; stopAll stops every process', async () => {
    const extra = await startFleet({ pods: 1, yaml: `model_list:${deploymentYaml('chat', up.at('east'))}\n` });
    const second = await extra.addPod();
    expect(extra.pods).toHaveLength(2);
    expect((await chat(second, 'chat')).status).toBe(200);
    expect(extra.events('listening').map((e) => e.pod)).toEqual([0, 1]);
    await extra.stopAll();
    expect(extra.pods.every((p) => p.proc.exited())).toBe(true);
  });

  it('a pod that cannot start fails the fleet, and the pods that did start are stopped', async () => {
    const before = gatewayChildren();
    // Pod 1 alone gets a setting that stops its start; pod 0 starts.
    const failing = startFleet({ pods: 2, yaml: `model_list:${deploymentYaml('chat', up.at('east'))}\n`, podEnv: (i): Record<string, string> => (i === 1 ? { GATEWAY_WORKERS: 'many' } : {}) });
    await expect(failing).rejects.toThrow(/GATEWAY_WORKERS/);
    expect(gatewayChildren()).toEqual(before);
    await expect(startFleet({ pods: 0, yaml: '' })).rejects.toThrow(/options.pods must be a whole number of at least 1/);
  });
});
