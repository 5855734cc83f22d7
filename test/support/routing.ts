/**
 * What the routing tests share: a real gateway (real threads) in front of
 * scripted deployments, a chat request that returns what the tests read
 * (status, headers, body), and the deployments' state from /status.
 */
import { expect } from 'vitest';
import { startTestGateway, type GatewayEndpoint, type TestGateway } from './gateway.js';
import { startScriptedUpstream, type Received, type ScriptedUpstream } from './scripted-upstream.js';
import { chatBody } from './requests.js';

export interface Routed {
  readonly up: ScriptedUpstream;
  readonly gw: TestGateway;
  close(): Promise<void>;
}

/** Scripted deployments `names`, and a gateway whose config `yaml` builds from them. */
export async function startRouted(names: readonly string[], yaml: (up: ScriptedUpstream) => string, options: { workers?: number; env?: Record<string, string> } = {}): Promise<Routed> {
  const up = await startScriptedUpstream(names);
  const gw = await startTestGateway({ yaml: yaml(up), workers: options.workers, env: options.env });
  return {
    up,
    gw,
    close: async () => {
      await gw.close();
      await up.close();
    },
  };
}

/**
 * Runs `body` against a started gateway and its deployments, and closes both whatever happens. A body that
 * passes still fails when a deployment refused a request it did not take (expectNoRefusals).
 */
export async function withRouted(starting: Promise<Routed>, body: (r: Routed) => Promise<void>): Promise<void> {
  const r = await starting;
  try {
    await body(r);
    expectNoRefusals(r.up);
  } finally {
    await r.close();
  }
}

/** `deployment: METHOD path (refused: why, key: …)`, one line per request, for an assertion's diff. */
export function describeReceived(name: string, requests: readonly Received[]): string[] {
  return requests.map((r) => `${name}: ${r.method} ${r.path} (${r.refused === null ? 'served' : `refused: ${r.refused}`}, key: ${r.key ?? 'none'})`);
}

/**
 * Fails when a deployment refused a request no test took: the gateway sent it another deployment's key (a
 * retry or fallback that kept the previous attempt's), no key, or a method and path the provider does not serve.
 */
export function expectNoRefusals(up: ScriptedUpstream): void {
  const refused = up.deployments.flatMap((d) => describeReceived(d.name, d.refusals()));
  expect(refused, 'the scripted deployments refused these requests, as the real service would').toEqual([]);
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The x-switchyard-* headers, for one expect. */
  readonly routing: { deployment: string | null; attempts: string | null; fallback: string | null };
}

/** One chat request through the gateway (in this process, or a process of a fleet), read whole. */
export async function chat(gw: Pick<GatewayEndpoint, 'fetch'>, model: string, extra: Record<string, unknown> = {}, init: RequestInit = {}): Promise<Answer> {
  const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody(model, extra), ...init });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    routing: { deployment: res.headers.get('x-switchyard-deployment'), attempts: res.headers.get('x-switchyard-attempts'), fallback: res.headers.get('x-switchyard-fallback') },
  };
}

export interface DeploymentState {
  readonly id: string;
  readonly state: 'healthy' | 'cooling_down' | 'half_open';
  readonly cooldown_remaining_ms: number;
  readonly in_flight: number;
  readonly latency_ewma_ms: number | null;
  readonly failures_last_minute: number;
  readonly last_error: { code: string; status: number; at: string } | null;
  readonly [key: string]: unknown;
}

/** `/status/models/{alias}`'s deployments, by id. */
export async function deploymentStates(gw: TestGateway, alias: string): Promise<Record<string, DeploymentState>> {
  const res = await gw.fetch(`/status/models/${encodeURIComponent(alias)}`);
  const body = (await res.json()) as { deployments: DeploymentState[] };
  return Object.fromEntries(body.deployments.map((d) => [d.id, d]));
}
