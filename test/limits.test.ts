/**
 * CONTRACT.md, Shared state across pods, without Redis: `rpm` and `tpm` per
 * deployment, per pod, shared by every worker thread. A real gateway with
 * two worker threads in front of scripted deployments that count what
 * reaches them; a 2-second window (router_settings.limit_window, a key for
 * tests) stands for the minute.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { deploymentYaml } from './support/scripted-upstream.js';
import { chat, deploymentStates, startRouted, withRouted } from './support/routing.js';
import { chatBody } from './support/requests.js';

const WINDOW_S = 2;
const WINDOW_MS = WINDOW_S * 1000;

/** The most arrivals within any span shorter than `spanMs` (times in ms, any order). */
function mostWithin(times: readonly number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[end] as number) - (sorted[start] as number) >= spanMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

describe('rpm and tpm per pod', () => {
  it('rpm: demand above the limit for 2.5 windows: the deployment never gets more than rpm calls in any window, and gets it in each', () =>
    withRouted(
      startRouted(['east'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', rpm: 6')}
  - model_name: warm
    params: { model: openai/warm-up, api_base: ${up.at('east').url}, api_key: ${up.at('east').key} }
router_settings: { limit_window: ${WINDOW_S} }
`, { workers: 2 }),
      async ({ gw, up }) => {
        // Arrivals are timed here, admissions in the gateway: connections and code made warm first (same origin,
        // no limit), so the first limited calls are not held in transit longer than the later ones.
        await Promise.all(Array.from({ length: 16 }, () => chat(gw, 'warm')));
        const started = performance.now();
        const statuses: number[] = [];
        // 8 callers in a loop, each sending as soon as its last answer came: far above 6 calls per window.
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            while (performance.now() - started < 2.5 * WINDOW_MS) statuses.push((await chat(gw, 'chat')).status);
          }),
        );
        const arrivals = up.at('east').received.filter((r) => r.body.model === 'model-east').map((r) => r.at);
        // Admission happens in the gateway a moment before arrival here; 150 ms covers a difference in transit.
        expect(mostWithin(arrivals, WINDOW_MS - 150), `arrivals (ms): ${arrivals.map((a) => Math.round(a - started)).join(' ')}`).toBeLessThanOrEqual(6);
        // Three windows began in the 2.5: the whole limit was used in each (at least 6 + 6 + some of the third).
        expect(arrivals.length).toBeGreaterThanOrEqual(13);
        expect(arrivals.length).toBeLessThanOrEqual(18);
        expect(new Set(statuses)).toEqual(new Set([200, 429]));
        expect(statuses.filter((s) => s === 200)).toHaveLength(arrivals.length);
      },
    ));

  it('a deployment at its rpm is skipped for the next one, like one at max_parallel_requests', () =>
    withRouted(
      startRouted(['east', 'west'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', rpm: 3, order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}
router_settings: { limit_window: 60 }
`),
      async ({ gw, up }) => {
        const answers = [];
        for (let i = 0; i < 8; i++) answers.push(await chat(gw, 'chat'));
        expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
        expect(answers.map((a) => a.routing.deployment)).toEqual(['east', 'east', 'east', 'west', 'west', 'west', 'west', 'west']);
        expect(up.at('east').received).toHaveLength(3);
        const states = await deploymentStates(gw, 'chat');
        expect(states.east?.limits).toMatchObject({ rpm: 3, tpm: null, window_s: 60, requests_in_window: 3 });
        expect(states.west?.limits, 'a deployment with no rpm or tpm shows none').toBeUndefined();
      },
    ));

  it('nothing has room: 429 rate_limited with Retry-After (the openai SDK sees a RateLimitError); room again once the window moved on', () =>
    withRouted(
      startRouted(['east', 'backup'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', rpm: 2')}${deploymentYaml('chat-backup', up.at('backup'), ', rpm: 1')}
router_settings: { limit_window: ${WINDOW_S}, fallbacks: [{ chat: [chat-backup] }] }
`),
      async ({ gw, up }) => {
        const sdk = gw.client({ maxRetries: 0 });
        for (let i = 0; i < 3; i++) await sdk.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
        expect([up.at('east').received.length, up.at('backup').received.length]).toEqual([2, 1]);
        const refused = await sdk.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
        expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
        const err = refused as InstanceType<typeof OpenAI.RateLimitError>;
        expect(err.status).toBe(429);
        expect(err.code).toBe('rate_limited');
        const retryAfter = Number(err.headers?.get('retry-after'));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(WINDOW_S + 1);
        expect(up.total()).toBe(3);
        // Retry-After is when the soonest has room: after it, a call is served.
        await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
        expect((await chat(gw, 'chat')).status).toBe(200);
      },
    ));

  it('tpm: the estimate (body bytes / 4 + max_tokens) is reserved before the call and settled on the usage the provider reports', () =>
    withRouted(
      startRouted(['east'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', tpm: 200')}
router_settings: { limit_window: 60 }
`),
      async ({ gw, up }) => {
        const body = chatBody('chat', { max_tokens: 50 });
        const estimate = Math.ceil(Buffer.byteLength(body) / 4) + 50;
        // The scripted deployment reports 5 tokens a call: each call settles at 5, so calls go on while 5·n + estimate ≤ 200.
        const expected = Math.floor((200 - estimate) / 5) + 1;
        const statuses: number[] = [];
        for (let i = 0; i < expected + 2; i++) statuses.push((await gw.fetch('/v1/chat/completions', { method: 'POST', body })).status);
        expect(statuses).toEqual([...Array(expected).fill(200), 429, 429]);
        expect(up.at('east').received).toHaveLength(expected);
        // /status/models shows the limits and this pod's use of them: the calls, their settled tokens, the two refused.
        const { east } = await deploymentStates(gw, 'chat');
        expect(east?.limits).toEqual({ rpm: null, tpm: 200, window_s: 60, requests_in_window: expected, tokens_in_window: 5 * expected, refused_total: 2 });
      },
    ));

  it('tpm: a stream that reports no usage counts its estimate', () =>
    withRouted(
      startRouted(['east'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', tpm: 200')}
router_settings: { limit_window: 60 }
`),
      async ({ gw, up }) => {
        const body = chatBody('chat', { max_tokens: 50, stream: true });
        const estimate = Math.ceil(Buffer.byteLength(body) / 4) + 50;
        const expected = Math.floor(200 / estimate);
        const statuses: number[] = [];
        for (let i = 0; i < expected + 1; i++) {
          const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body });
          await res.text();
          statuses.push(res.status);
        }
        expect(statuses).toEqual([...Array(expected).fill(200), 429]);
        expect(up.at('east').received).toHaveLength(expected);
      },
    ));

  it('a call that fails before it is sent gives its place back', () =>
    withRouted(
      startRouted(['east'], (up) => `
model_list:
  - model_name: chat
    params: { model: openai/gone, api_base: http://127.0.0.1:9/v1, api_key: sk-x, rpm: 2, order: 1 }
    model_info: { id: gone }${deploymentYaml('chat', up.at('east'), ', order: 2')}
router_settings: { limit_window: 60, allowed_fails: 100, num_retries: 1 }
`),
      async ({ gw, up }) => {
        // Each call tries `gone` first (its connect is refused: nothing was sent), then east. With its places
        // given back, `gone` stays under its rpm of 2 and is tried every time.
        const answers = [];
        for (let i = 0; i < 5; i++) answers.push(await chat(gw, 'chat'));
        expect(answers.map((a) => [a.status, a.routing.deployment, a.routing.attempts])).toEqual(Array(5).fill([200, 'east', '2']));
        expect(up.at('east').received).toHaveLength(5);
      },
    ));
});
