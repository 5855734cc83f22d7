/**
 * CONTRACT.md, Routing for high volume: every row of the failure table,
 * through the real gateway (real worker threads) in front of scripted
 * deployments over real HTTP. Group `chat` is east (order 1, so always
 * tried first while usable) and west (order 2); it falls back to `backup`
 * (south) and, for a prompt too long, to `long` (north).
 */
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deploymentYaml, type Step } from './support/scripted-upstream.js';
import { chat, deploymentStates, expectNoRefusals, startRouted, type Routed } from './support/routing.js';
import { REFUSED_PORT } from './support/start-command.js';

const NAMES = ['east', 'west', 'south', 'north'];

function config(up: Routed['up'], router = ''): string {
  return `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1, headers_timeout: 0.5')}${deploymentYaml('chat', up.at('west'), ', order: 2')}${deploymentYaml('backup', up.at('south'))}${deploymentYaml('long', up.at('north'))}
router_settings:
  fallbacks: [{ chat: [backup] }]
  context_window_fallbacks: [{ chat: [long] }]
${router}`;
}

describe('the failure table', () => {
  let r: Routed;
  beforeEach(async () => {
    r = await startRouted(NAMES, (up) => config(up));
  });
  afterEach(async () => {
    try {
      expectNoRefusals(r.up);
    } finally {
      await r.close();
    }
  });
  const at = (name: string) => r.up.at(name);

  describe('transient failures: retried on another deployment, counted toward allowed_fails, not cooled before it', () => {
    const cases: Array<{ name: string; step: Step; code: string; status: number }> = [
      { name: 'provider 500', step: { kind: 'status', status: 500 }, code: 'upstream_error', status: 500 },
      { name: 'provider 502', step: { kind: 'status', status: 502 }, code: 'upstream_error', status: 502 },
      { name: 'provider 503', step: { kind: 'status', status: 503 }, code: 'upstream_error', status: 503 },
      { name: 'provider 408', step: { kind: 'status', status: 408 }, code: 'upstream_error', status: 408 },
      { name: 'provider 529', step: { kind: 'status', status: 529 }, code: 'upstream_error', status: 529 },
      { name: 'a body that is not the compatible format', step: { kind: 'body', body: '{"hello":"world"}' }, code: 'upstream_invalid_response', status: 0 },
      { name: 'a reset before the headers', step: { kind: 'reset-before-headers' }, code: 'upstream_unreachable', status: 0 },
      { name: 'the headers timeout (0.5 s)', step: { kind: 'hang' }, code: 'upstream_headers_timeout', status: 0 },
    ];
    it.each(cases)('$name', async ({ step, code, status }) => {
      at('east').script(step);
      const answer = await chat(r.gw, 'chat');
      expect(answer.status).toBe(200);
      expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      expect(JSON.parse(answer.text).choices[0].message.content).toBe('from west');
      const east = (await deploymentStates(r.gw, 'chat')).east;
      expect(east).toMatchObject({ state: 'healthy', failures_last_minute: 1, last_error: { code, status } });
      expect(at('west').received).toHaveLength(1);
      // The model each deployment received is its own upstream id.
      expect(at('east').received[0]?.body.model).toBe('model-east');
      expect(at('west').received[0]?.body.model).toBe('model-west');
    });

    it('a connect error (nothing listens) is retried on another deployment', async () => {
      const dead = REFUSED_PORT;
      const local = await startRouted(['west'], (up) => `
model_list:
  - model_name: chat
    params: { model: openai/model-dead, api_base: http://127.0.0.1:${dead}/v1, api_key: k, order: 1 }
    model_info: { id: dead }${deploymentYaml('chat', up.at('west'), ', order: 2')}
`);
      try {
        const answer = await chat(local.gw, 'chat');
        expect(answer.status).toBe(200);
        expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
        expect((await deploymentStates(local.gw, 'chat')).dead?.last_error).toMatchObject({ code: 'upstream_unreachable', status: 0 });
        // The retry carried west's own key, not the dead deployment's `k`.
        expect(local.up.at('west').received.map((q) => q.key)).toEqual([local.up.at('west').key]);
        expectNoRefusals(local.up);
      } finally {
        await local.close();
      }
    });

    it('the allowed_fails-th failure within a minute (3) cools the deployment: the next call does not reach it', async () => {
      at('east').script({ kind: 'status', status: 500 }, { kind: 'status', status: 500 }, { kind: 'status', status: 500 });
      for (let i = 0; i < 3; i++) expect((await chat(r.gw, 'chat')).routing.deployment).toBe('west');
      const east = (await deploymentStates(r.gw, 'chat')).east;
      expect(east?.state).toBe('cooling_down');
      expect(east?.cooldown_remaining_ms).toBeGreaterThan(25_000);
      expect(east?.cooldown_remaining_ms).toBeLessThanOrEqual(30_000);
      const next = await chat(r.gw, 'chat');
      expect(next.routing).toEqual({ deployment: 'west', attempts: '1', fallback: null });
      expect(at('east').received).toHaveLength(3);
    });
  });

  describe('provider 429: retried on another deployment first, cooled at once', () => {
    it.each([
      { retryAfter: '45', low: 40_000, high: 45_000, why: 'Retry-After longer than cooldown_time wins' },
      { retryAfter: '1', low: 25_000, high: 30_000, why: 'cooldown_time when Retry-After is shorter' },
      { retryAfter: '100000', low: 295_000, high: 300_000, why: 'Retry-After counts up to 300 s' },
    ])('Retry-After $retryAfter: $why', async ({ retryAfter, low, high }) => {
      at('east').script({ kind: 'status', status: 429, retryAfter });
      const answer = await chat(r.gw, 'chat');
      expect(answer.status).toBe(200);
      expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      const east = (await deploymentStates(r.gw, 'chat')).east;
      expect(east).toMatchObject({ state: 'cooling_down', last_error: { code: 'rate_limited', status: 429 } });
      expect(east?.cooldown_remaining_ms).toBeGreaterThan(low);
      expect(east?.cooldown_remaining_ms).toBeLessThanOrEqual(high);
      expect((await chat(r.gw, 'chat')).routing).toEqual({ deployment: 'west', attempts: '1', fallback: null });
      expect(at('east').received).toHaveLength(1);
    });

    it('when every deployment limits, the last 429 reaches the caller as the provider sent it', async () => {
      const body = { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } };
      for (const name of NAMES) at(name).always({ kind: 'status', status: 429, retryAfter: '3', body });
      const err = await r.gw
        .client()
        .chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      const limited = err as InstanceType<typeof OpenAI.RateLimitError>;
      expect(limited.headers.get('retry-after')).toBe('3');
      // east, west, then the fallback group: 1 + num_retries (2) attempts.
      expect(limited.headers.get('x-switchyard-attempts')).toBe('3');
      expect(limited.headers.get('x-switchyard-deployment')).toBe('south');
      expect(limited.headers.get('x-switchyard-fallback')).toBe('backup');
      expect(limited.error).toEqual(body.error);
    });
  });

  describe('provider 401 and 403: the gateway credentials, refused', () => {
    const LEAKY = 'Incorrect API key provided: sk-key-of-east-0123456789abcdef. You can find your API key at https://platform.openai.com/account/api-keys.';

    it.each([401, 403])('%i: retried on another deployment, the deployment cooled at once', async (status) => {
      at('east').script({ kind: 'status', status, body: { error: { message: LEAKY, type: 'invalid_request_error', code: 'invalid_api_key' } } });
      const answer = await chat(r.gw, 'chat');
      expect(answer.status).toBe(200);
      expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
      expect((await deploymentStates(r.gw, 'chat')).east).toMatchObject({ state: 'cooling_down', last_error: { code: 'upstream_auth_failed', status } });
    });

    it('the last one is answered 502 upstream_auth_failed with the gateway message; the provider text is only logged, keys redacted', async () => {
      for (const name of NAMES) at(name).always({ kind: 'status', status: 401, body: { error: { message: LEAKY, type: 'invalid_request_error', code: 'invalid_api_key' } } });
      const answer = await chat(r.gw, 'chat');
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text)).toEqual({ error: { message: 'the provider rejected the gateway credentials for this model', type: 'gateway_error', code: 'upstream_auth_failed' } });
      expect(answer.text).not.toContain('sk-key-of');
      expect(answer.routing.attempts).toBe('3');
      await r.up.waitFor(() => r.gw.logs().filter((l) => l.event === 'upstream_auth_failed').length === 3);
      const lines = r.gw.logs().filter((l) => l.event === 'upstream_auth_failed');
      expect(lines.map((l) => l.deployment).sort()).toEqual(['east', 'south', 'west']);
      for (const line of lines) {
        expect(line.provider_message).toContain('Incorrect API key provided');
        expect(line.provider_message).toContain('[redacted]');
      }
      expect(r.gw.rawLogs.join('\n')).not.toContain('sk-key-of-east-0123456789abcdef');
    });
  });

  describe('the prompt is too long: no other attempt in the group, not cooled, context_window_fallbacks only', () => {
    it("OpenAI's context_length_exceeded goes to the context-window fallback", async () => {
      const tooLong = { error: { message: "This model's maximum context length is 8192 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } };
      at('east').script({ kind: 'status', status: 400, body: tooLong });
      const answer = await chat(r.gw, 'chat');
      expect(answer.status).toBe(200);
      expect(answer.routing).toEqual({ deployment: 'north', attempts: '2', fallback: 'long' });
      expect(at('west').received).toHaveLength(0);
      expect(at('south').received).toHaveLength(0);
      expect((await deploymentStates(r.gw, 'chat')).east).toMatchObject({ state: 'healthy', failures_last_minute: 0, last_error: null });
    });

    it("Anthropic's 'prompt is too long' with no context-window fallback is passed through as sent", async () => {
      const body = { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } };
      at('south').script({ kind: 'status', status: 400, body });
      const answer = await chat(r.gw, 'backup');
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual(body);
      expect(answer.routing).toEqual({ deployment: 'south', attempts: '1', fallback: null });
      expect(at('south').received).toHaveLength(1);
    });
  });

  it('any other provider 4xx is passed through at once: no other attempt, nothing cooled, the routing headers on it', async () => {
    const body = { error: { message: 'unprocessable', type: 'invalid_request_error', code: 'bad_param' } };
    at('east').script({ kind: 'status', status: 422, body });
    const answer = await chat(r.gw, 'chat');
    expect(answer.status).toBe(422);
    expect(JSON.parse(answer.text)).toEqual(body);
    expect(answer.routing).toEqual({ deployment: 'east', attempts: '1', fallback: null });
    expect(at('west').received).toHaveLength(0);
    expect((await deploymentStates(r.gw, 'chat')).east).toMatchObject({ state: 'healthy', failures_last_minute: 0 });
  });

  it('when the group is spent, its fallback group serves (x-switchyard-fallback); the attempts count across groups', async () => {
    at('east').script({ kind: 'status', status: 500 });
    at('west').script({ kind: 'status', status: 503 });
    const completion = await r.gw.client().chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(completion.data.choices[0]?.message.content).toBe('from south');
    expect(completion.response.headers.get('x-switchyard-fallback')).toBe('backup');
    expect(completion.response.headers.get('x-switchyard-attempts')).toBe('3');
    expect(completion.response.headers.get('x-switchyard-deployment')).toBe('south');
  });

  it('every attempt failing: the last failure, as a 502 with the provider Retry-After kept', async () => {
    for (const name of NAMES) at(name).always({ kind: 'status', status: 503, retryAfter: '9' });
    const answer = await chat(r.gw, 'chat');
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.text).error.code).toBe('upstream_error');
    expect(answer.headers.get('retry-after')).toBe('9');
    expect(answer.routing).toEqual({ deployment: 'south', attempts: '3', fallback: 'backup' });
  });
});
