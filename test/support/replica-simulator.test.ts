/**
 * The replica simulator against the official `openai` client, and its
 * /metrics against what vLLM's docs say each figure means
 * (docs/design/metrics.md: num_requests_running "Number of requests in model
 * execution batches", num_requests_waiting "Number of requests waiting to be
 * processed", kv_cache_usage_perc "Fraction of used KV cache blocks (0–1)",
 * prefix_cache_queries / hits in tokens), read back through the gateway's
 * own parser (src/inference/server-metrics.ts).
 */
import OpenAI, { AuthenticationError, NotFoundError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServerMetrics } from '../../src/inference/server-metrics.js';
import { startReplica, type Replica, type ReplicaOptions } from './replica-simulator.js';

const open: Replica[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});

async function replica(options: ReplicaOptions = {}): Promise<{ sim: Replica; client: OpenAI }> {
  const sim = await startReplica(options);
  open.push(sim);
  return { sim, client: new OpenAI({ baseURL: sim.apiBase, apiKey: options.apiKey ?? 'unused', maxRetries: 0 }) };
}

async function scrape(sim: Replica, kind: 'vllm' | 'sglang' = 'vllm') {
  const res = await fetch(`${sim.origin}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, ...parseServerMetrics(text, kind) };
}

const SYSTEM = 'You are the support assistant of a company that sells very long system prompts. '.repeat(16); // 1,312 characters: 20 blocks

describe('replica simulator: an OpenAI-compatible server', () => {
  it('answers the openai client, whole and streamed, with usage', async () => {
    const { sim, client } = await replica({ outputTokens: 5 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['meta-llama/Llama-3.1-8B-Instruct']);

    const whole = await client.chat.completions.create({ model: 'meta-llama/Llama-3.1-8B-Instruct', messages: [{ role: 'user', content: 'hello' }] });
    expect(whole.choices[0]?.message.content).toBe('tok1 tok2 tok3 tok4 tok5 ');
    expect(whole.usage).toMatchObject({ completion_tokens: 5, prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) });

    const stream = await client.chat.completions.create({ model: 'meta-llama/Llama-3.1-8B-Instruct', messages: [{ role: 'user', content: 'hello' }], stream: true, stream_options: { include_usage: true }, max_tokens: 3 });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('tok1 tok2 tok3 ');
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(3);
    expect(sim.requests.map((r) => r.stream)).toEqual([false, true]);
    for (const r of sim.requests) expect(r.arrival <= (r.start as number) && (r.start as number) <= (r.firstToken as number) && (r.firstToken as number) <= (r.end as number)).toBe(true);
  });

  it('refuses a wrong key with 401 on /v1, keeps /metrics and /health open, and answers 404 to a wrong path or method', async () => {
    const { sim } = await replica({ apiKey: 'sk-replica' });
    const wrong = new OpenAI({ baseURL: sim.apiBase, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrong.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(AuthenticationError);
    const unauth = await fetch(`${sim.apiBase}/models`);
    expect(unauth.status).toBe(401);
    expect(await unauth.json()).toEqual({ error: 'Unauthorized' });
    expect((await fetch(`${sim.origin}/metrics`)).status).toBe(200);
    expect((await fetch(`${sim.origin}/health`)).status).toBe(200);
    const right = new OpenAI({ baseURL: sim.apiBase, apiKey: 'sk-replica', maxRetries: 0 });
    await expect(right.completions.create({ model: 'm', prompt: 'x' })).rejects.toBeInstanceOf(NotFoundError);
    expect((await fetch(`${sim.apiBase}/chat/completions`, { headers: { authorization: 'Bearer sk-replica' } })).status).toBe(404);
    expect((await fetch(`${sim.origin}/metrics`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${sim.origin}/nowhere`)).status).toBe(404);
    expect(sim.requests).toHaveLength(0);
  });
});

describe('replica simulator: faults a test asks for', () => {
  it('failMetrics: /metrics answers the status with no figures while chat serves; failChat: chat answers the status, and /metrics still serves', async () => {
    const { sim, client } = await replica({ outputTokens: 1 });
    sim.failMetrics(503);
    const down = await fetch(`${sim.origin}/metrics`);
    expect([down.status, await down.text()]).toEqual([503, '']);
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    sim.failMetrics(null);
    sim.failChat(500);
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 500 });
    expect((await scrape(sim)).waiting).toBe(0);
    sim.failChat(null);
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    // The failed call never reached the batch.
    expect(sim.requests).toHaveLength(2);
  });
});

describe('replica simulator: /metrics means what vLLM says', () => {
  it('running is capped by the batch; the queue grows once the slots are full, and drains in order', async () => {
    const { sim, client } = await replica({ maxRunning: 2, outputTokens: 2 });
    sim.pause();
    const calls = Array.from({ length: 6 }, (_, i) => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `request ${i}` }] }));
    await sim.waitFor(() => sim.requests.length === 6);
    const busy = await scrape(sim);
    expect(busy.running).toBe(2);
    expect(busy.waiting).toBe(4);
    expect(busy.text).toContain('# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0"} 4.0\n');
    sim.resume();
    await Promise.all(calls);
    const idle = await scrape(sim);
    expect([idle.running, idle.waiting]).toEqual([0, 0]);
    // FIFO: admitted in arrival order.
    const starts = sim.requests.map((r) => r.start as number);
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
  });

  it('KV-cache use is the blocks running requests hold; cached blocks no request holds count as free, and are reused', async () => {
    const { sim, client } = await replica({ kvBlocks: 200, maxRunning: 4, outputTokens: 16 });
    sim.pause();
    const first = client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'one' }] });
    await sim.waitFor(() => sim.running() === 1);
    const one = await scrape(sim);
    // 20 whole prompt blocks + a partial one + 1 block of 16 output tokens, of 200.
    expect(one.kvCache).toBeCloseTo(22 / 200, 10);
    const second = client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'two' }] });
    const other = client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: 'Another prompt entirely. '.repeat(60) }] });
    await sim.waitFor(() => sim.running() === 3);
    const three = await scrape(sim);
    expect(three.kvCache).toBeGreaterThan(one.kvCache as number);
    sim.resume();
    await Promise.all([first, second, other]);
    const idle = await scrape(sim);
    expect(idle.kvCache).toBe(0);
    expect(sim.cachedBlockCount()).toBeGreaterThanOrEqual(20);
    // The second found the first's 20 blocks only if it was admitted after they were computed: here it was
    // admitted while the first was paused before its prefill, so it found none; a third one now finds them.
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'three' }] });
    expect(sim.requests[3]?.cachedBlocks).toBe(20);
    const hits = /vllm:prefix_cache_hits_total\{[^}]*\} (\S+)\n/.exec((await scrape(sim)).text);
    expect(Number(hits?.[1])).toBe(20 * 16);
  });

  it('a prompt whose prefix is cached has a shorter time to first token', async () => {
    const { sim, client } = await replica({ prefillMsPerBlock: 5, decodeMsPerToken: 1, outputTokens: 2 });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'first turn' }] });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'first turn' }, { role: 'assistant', content: 'tok1 tok2 ' }, { role: 'user', content: 'second turn' }] });
    const [cold, warm] = sim.requests as [NonNullable<(typeof sim.requests)[0]>, NonNullable<(typeof sim.requests)[0]>];
    expect(cold.cachedBlocks).toBe(0);
    expect(warm.cachedBlocks).toBe(cold.promptBlocks);
    const ttft = (r: typeof cold) => (r.firstToken as number) - r.arrival;
    // The cold prefill is its 20 blocks at 5 ms (a timer may fire up to a ms early); the warm one prefills 1 or 2.
    expect((cold.firstToken as number) - (cold.start as number)).toBeGreaterThanOrEqual(cold.promptBlocks * 5 - 2);
    expect(ttft(warm)).toBeLessThan(ttft(cold) / 2);
  });

  it('a request that does not fit in the KV cache waits, and least recently used cached blocks are evicted for new ones', async () => {
    const { sim, client } = await replica({ kvBlocks: 30, maxRunning: 4, outputTokens: 1 });
    sim.pause();
    const a = client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }] });
    const b = client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM.replace('support', 'billing') }] });
    await sim.waitFor(() => sim.requests.length === 2);
    expect([sim.running(), sim.waiting()]).toEqual([1, 1]);
    const m = await scrape(sim);
    expect([m.running, m.waiting]).toEqual([1, 1]);
    sim.resume();
    await Promise.all([a, b]);
    // a held 22 of 30 blocks; once it finished its 20 prompt blocks stayed cached but free. b needed 22:
    // the 8 never used, then 12 of a's evicted, least recent first, and a's tail (freed first) is the
    // least recent: a's first 8 blocks survive and a third request with a's prompt finds exactly them.
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }] });
    expect(sim.requests[2]?.cachedBlocks).toBe(8);
  });

  it('a client that leaves frees its slot', async () => {
    const { sim, client } = await replica({ maxRunning: 1, outputTokens: 50 });
    sim.pause();
    const ctl = new AbortController();
    const gone = client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'leaving' }] }, { signal: ctl.signal }).catch((e: unknown) => e);
    const next = client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'staying' }], max_tokens: 1 });
    await sim.waitFor(() => sim.requests.length === 2);
    expect(sim.waiting()).toBe(1);
    ctl.abort();
    await sim.waitFor(() => sim.requests[0]?.aborted === true && sim.running() === 1 && sim.waiting() === 0);
    sim.resume();
    await next;
    await gone;
  });
});

describe('replica simulator: names by server and version', () => {
  it('an older vLLM shows only vllm:gpu_cache_usage_perc; 0.9-0.10 show both', async () => {
    const { sim: old } = await replica({ kvMetric: 'old' });
    const o = await scrape(old);
    expect(o.text).toContain('# TYPE vllm:gpu_cache_usage_perc gauge\n');
    expect(o.text).not.toContain('vllm:kv_cache_usage_perc');
    expect(o.kvCache).toBe(0);
    const { sim: both } = await replica({ kvMetric: 'both' });
    const b = await scrape(both);
    expect(b.text).toContain('vllm:gpu_cache_usage_perc{');
    expect(b.text).toContain('vllm:kv_cache_usage_perc{');
  });

  it('SGLang: sglang:num_queue_reqs, sglang:num_running_reqs, sglang:token_usage', async () => {
    const { sim, client } = await replica({ engine: 'sglang', maxRunning: 1, model: 'Qwen/Qwen2.5-7B-Instruct' });
    sim.pause();
    const calls = [0, 1, 2].map((i) => client.chat.completions.create({ model: 'm', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `${i}` }] }));
    await sim.waitFor(() => sim.requests.length === 3);
    const m = await scrape(sim, 'sglang');
    expect([m.running, m.waiting]).toEqual([1, 2]);
    expect(m.kvCache).toBeGreaterThan(0);
    expect(m.text).toContain('# HELP sglang:num_queue_reqs The number of requests in the waiting queue.\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs{model_name="Qwen/Qwen2.5-7B-Instruct"} 2.0\n');
    expect(parseServerMetrics(m.text, 'vllm')).toEqual({ waiting: null, running: null, kvCache: null });
    sim.resume();
    await Promise.all(calls);
  });
});
