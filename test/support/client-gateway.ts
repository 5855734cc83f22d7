/**
 * The fixture shared by the client-fault tests (test/clients.test.ts and
 * test/stress/connections.test.ts): one gateway with upstream-backed and mock
 * aliases, checks after every case that the gateway still answers and holds
 * nothing in flight, and the small helpers both files time things with.
 */
import http from 'node:http';
import { afterEach, expect } from 'vitest';
import type { FakeUpstream } from './fake-upstream.js';
import { UPSTREAM_KEY, useGateway, type TestGateway } from './gateway.js';
import { chatBody, expectLive } from './requests.js';
import { until } from './waits.js';

export const MiB = 1024 * 1024;
export const CHAT = '/v1/chat/completions';
export const EMBED = '/v1/embeddings';
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export interface ClientGateway {
  readonly upstream: FakeUpstream;
  readonly gw: TestGateway;
  /** What is in flight: pool calls, front counters, open streams. */
  inFlight(): { pool: number; counters: number; streams: number };
  expectIdle(context: string, timeoutMs?: number): Promise<void>;
  /** One mock chat on a fresh connection (or `agent`'s); returns its latency in ms. */
  timedChat(agent?: http.Agent): Promise<number>;
}

/** Registers the shared hooks and returns the fixture, filled in by its beforeAll. */
export function useClientGateway(): ClientGateway {
  const { gw, upstream } = useGateway({ gateway: (upstream) => ({ yaml: clientYaml(upstream) }) });
  const fx: ClientGateway = {
    upstream,
    gw,
    inFlight: () => ({ pool: gw.gateway.context.pool.stats().inFlight, counters: gw.gateway.context.counters.inFlight, streams: gw.gateway.context.counters.streamsOpen }),
    async expectIdle(context: string, timeoutMs = 2000) {
      await until(() => { const f = fx.inFlight(); return f.pool === 0 && f.counters === 0 && f.streams === 0; }, `${context}: nothing in flight (${JSON.stringify(fx.inFlight())})`, timeoutMs);
    },
    timedChat: (agent?: http.Agent) => timedChat(fx, agent),
  };
  afterEach(async () => {
    await expectLive(gw, 'after the case');
    await fx.expectIdle('after the case');
    expect(gw.gateway.context.pool.stats().restarts).toBe(0);
  });
  return fx;
}

function clientYaml(upstream: FakeUpstream): string {
  return `
model_list:
  - model_name: up-chat
    params: { model: openai/fake-model, api_base: ${upstream.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: up-embed
    params: { model: openai/fake-embed, api_base: ${upstream.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 5 }
  - model_name: mock-embed
    params: { model: mock/embed-small, mock_embedding_dimensions: 8 }
  - model_name: mock-slow-stream
    params: { model: mock/chat-small, mock_stream_chunks: 200, mock_chunk_interval_ms: 20 }
  - model_name: mock-slow
    params: { model: mock/chat-small, mock_latency_ms: 5000 }
`;
}

async function timedChat(fx: ClientGateway, agent?: http.Agent): Promise<number> {
  const body = chatBody('mock-chat', {}, 'ping');
  const t0 = performance.now();
  const { status } = await new Promise<{ status: number }>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: fx.gw.port, path: CHAT, method: 'POST', agent: agent ?? false, headers: { authorization: `Bearer ${fx.gw.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, timeout: 5000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('chat: no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
  expect(status).toBe(200);
  return performance.now() - t0;
}
