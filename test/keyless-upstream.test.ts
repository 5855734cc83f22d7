/**
 * Keyless upstreams (issue 21, point 7; CONTRACT.md, Config file): an
 * `openai` deployment with its own `api_base` and no `api_key` (a
 * self-hosted vLLM, TGI, Ollama or LM Studio) needs no credentials. The pod
 * is Ready, `/status/models/{alias}` says `not_required`, and the upstream is
 * called, and probed, without an `Authorization` header. Only an `api_key`
 * naming an unset variable, or no `api_key` at the hosted default api_base
 * while OPENAI_API_KEY is unset, is missing.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { UPSTREAM_KEY, startTestGateway, useGateway } from './support/gateway.js';

const UNSET = 'SWITCHYARD_KEYLESS_TEST_UNSET';

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

function credentialsCheckOf(report: Record<string, unknown>): Record<string, unknown> | undefined {
  return (report.checks as Array<Record<string, unknown>>).find((c) => c.name === 'provider_credentials');
}

describe('a pod whose only alias is a keyless openai deployment (a self-hosted vLLM)', () => {
  // The fake is keyless too, as the self-hosted server is: it takes a request with no key.
  const { gw, upstream } = useGateway({
    upstreamKey: null,
    gateway: (up) => ({
      workers: 1,
      yaml: `
model_list:
  - model_name: local-llama
    params: { model: openai/meta-llama/Llama-3-8B, api_base: ${up.url} }
health: { cache_ttl: 0 }
`,
    }),
  });

  it('is Ready: /ready answers 200 with provider_credentials healthy', async () => {
    const res = await gw.fetch('/ready', { auth: false });
    const report = await json(res);
    expect(res.status, JSON.stringify(report)).toBe(200);
    expect(credentialsCheckOf(report)?.status).toBe('healthy');
  });

  it('/status/models/{alias} says not_required, with no source, and routable', async () => {
    const res = await gw.fetch('/status/models/local-llama');
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ alias: 'local-llama', provider: 'openai', api_base: upstream.url, credentials: 'not_required', credentials_source: null, routable: true });
  });

  it('a chat call through the openai SDK succeeds, and the upstream saw no Authorization header', async () => {
    const completion = await gw.client().chat.completions.create({ model: 'local-llama', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]?.message.content).toEqual(expect.any(String));
    const posts = upstream.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => r.path)).toEqual(['/v1/chat/completions']);
    expect((posts[0]!.json as { model: string }).model).toBe('meta-llama/Llama-3-8B');
    expect(posts[0]!.headers).not.toHaveProperty('authorization');
  });

  it('the upstream health check probes GET /models without an Authorization header', async () => {
    const res = await gw.fetch('/health', { auth: false });
    const report = await json(res);
    expect((report.checks as Array<{ name: string; status: string }>).find((c) => c.name === `upstream:${upstream.origin}`)?.status).toBe('healthy');
    const probes = upstream.requests.filter((r) => r.method === 'GET');
    expect(probes.map((r) => r.path)).toEqual(['/v1/models']);
    expect(probes[0]!.headers).not.toHaveProperty('authorization');
  });
});

describe('keyed and missing credentials beside it', () => {
  /** Aliases whose credentials are missing: an api_key naming an unset variable, and no api_key at the default api_base. */
  const missing = (apiBase: string) => `
  - model_name: unset-var
    params: { model: openai/m, api_base: ${apiBase}, api_key: os.environ/${UNSET} }
  - model_name: hosted
    params: { model: openai/gpt-4o-mini }`;
  // startTestGateway reads only the env it is given: neither OPENAI_API_KEY nor UNSET is set.
  const { gw, upstream } = useGateway({
    gateway: (up) => ({
      workers: 1,
      yaml: `
model_list:
  - model_name: literal
    params: { model: openai/m, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }${missing(up.url)}
`,
    }),
  });

  it('a deployment with a literal key sends Authorization: Bearer <key>', async () => {
    await gw.client().chat.completions.create({ model: 'literal', messages: [{ role: 'user', content: 'hi' }] });
    expect(upstream.requests.map((r) => [r.method, r.path, r.headers.authorization])).toEqual([['POST', '/v1/chat/completions', `Bearer ${UPSTREAM_KEY}`]]);
  });

  it('an api_key naming an unset variable, and no api_key at the default api_base without OPENAI_API_KEY, are missing', async () => {
    const status = async (alias: string) => json(await gw.fetch(`/status/models/${alias}`));
    expect(await status('literal')).toMatchObject({ credentials: 'present', credentials_source: 'literal', routable: true });
    expect(await status('unset-var')).toMatchObject({ credentials: 'missing', credentials_source: UNSET, routable: false });
    expect(await status('hosted')).toMatchObject({ api_base: 'https://api.openai.com/v1', credentials: 'missing', credentials_source: 'OPENAI_API_KEY', routable: false });
  });

  it('calls to them are answered 503 credentials_missing and nothing is sent upstream', async () => {
    for (const model of ['unset-var', 'hosted']) {
      const err = await gw
        .client()
        .chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(err, model).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status, model).toBe(503);
      expect((err as InstanceType<typeof OpenAI.APIError>).code, model).toBe('credentials_missing');
    }
    expect(upstream.requests).toEqual([]);
  });

  it('a pod whose only routes are missing credentials is not Ready', async () => {
    const unready = await startTestGateway({ workers: 1, yaml: `model_list:${missing(upstream.url)}\nhealth: { cache_ttl: 0 }\n` });
    try {
      const res = await unready.fetch('/ready', { auth: false });
      expect(res.status).toBe(503);
      expect(credentialsCheckOf(await json(res))?.status).toBe('unhealthy');
    } finally {
      await unready.close();
    }
  });
});
