/**
 * The gateway's own failures on POST /v1/messages, end to end in
 * Anthropic's error shape with the `@anthropic-ai/sdk` error class for each
 * status (CONTRACT.md, Anthropic Messages API (inbound), Errors;
 * protocol/anthropic-errors.ts): 413 `request_too_large` for a body over
 * GATEWAY_MAX_BODY_BYTES, 429 `rate_limit_error` while a lone deployment
 * backs off (it answered 429 Retry-After: 30, over max_retry_wait), 503
 * `overloaded_error` when every deployment of the group cools down
 * (no_deployment_available). Against the scripted OpenAI-compatible
 * deployments (test/support/scripted-upstream.ts), translated through chat.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoRefusals, startRouted, type Routed } from './support/routing.js';
import { deploymentYaml } from './support/scripted-upstream.js';
import { TEST_KEY } from './support/gateway.js';

type ApiError = InstanceType<typeof Anthropic.APIError>;
const MAX_BODY = 64 * 1024;

let routed: Routed;
let client: Anthropic;

beforeAll(async () => {
  routed = await startRouted(
    ['solo', 'east', 'west', 'big'],
    (up) => `
model_list:${deploymentYaml('solo', up.at('solo'))}${deploymentYaml('pair', up.at('east'), ', order: 1')}${deploymentYaml('pair', up.at('west'), ', order: 2')}${deploymentYaml('big', up.at('big'))}
router_settings: { num_retries: 2, cooldown_time: 1 }
`,
    { env: { GATEWAY_MAX_BODY_BYTES: String(MAX_BODY) } },
  );
  client = new Anthropic({ baseURL: routed.gw.url, apiKey: TEST_KEY, maxRetries: 0 });
});
afterAll(async () => {
  expectNoRefusals(routed.up);
  await routed?.close();
});

const ask = (model: string, text = 'hi') => client.messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: text }] });
/** The SDK's error for a call that must fail. */
async function refused(model: string, text = 'hi'): Promise<ApiError> {
  const outcome = await ask(model, text).then(
    () => null,
    (e: unknown) => e,
  );
  expect(outcome).toBeInstanceOf(Anthropic.APIError);
  return outcome as ApiError;
}

/** An error body in Anthropic's shape, typed `type`, with the gateway's request id. */
function expectAnthropicError(error: ApiError, status: number, type: string): void {
  expect(error.status).toBe(status);
  expect(error.error).toEqual({ type: 'error', error: { type, message: expect.any(String) }, request_id: expect.any(String) });
  expect((error.error as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
  expect(error.requestID ?? (error.error as { request_id: string }).request_id).toBeTruthy();
}

describe("the gateway's own errors on /v1/messages, in Anthropic's shape", () => {
  it('413 request_too_large: a body over GATEWAY_MAX_BODY_BYTES, before any upstream (APIError with status 413); one just under passes', async () => {
    const error = await refused('big', 'x'.repeat(MAX_BODY));
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expectAnthropicError(error, 413, 'request_too_large');
    expect(routed.up.at('big').received).toHaveLength(0);
    const fits = await ask('big', 'x'.repeat(MAX_BODY - 200));
    expect(fits).toMatchObject({ type: 'message', role: 'assistant' });
    expect(routed.up.at('big').received).toHaveLength(1);
  });

  it("429 rate_limit_error from the gateway itself: a lone deployment's 429 Retry-After: 30 reaches the caller once, then the gateway answers for it with the wait left (RateLimitError)", async () => {
    const solo = routed.up.at('solo');
    solo.script({ kind: 'status', status: 429, retryAfter: '30' });
    const first = await refused('solo');
    expect(first).toBeInstanceOf(Anthropic.RateLimitError);
    expectAnthropicError(first, 429, 'rate_limit_error');
    expect(first.headers?.get('retry-after')).toBe('30');
    const during = await refused('solo');
    expect(during).toBeInstanceOf(Anthropic.RateLimitError);
    expectAnthropicError(during, 429, 'rate_limit_error');
    expect((during.error as { error: { message: string } }).error.message).toMatch(/^the provider of deployment "solo" asked for a pause/);
    expect(Number(during.headers?.get('retry-after'))).toBeGreaterThanOrEqual(29);
    expect(Number(during.headers?.get('retry-after'))).toBeLessThanOrEqual(30);
    expect(during.headers?.get('x-switchyard-attempts')).toBe('0');
    expect(solo.received).toHaveLength(1);
  });

  it('503 overloaded_error: every deployment of the group cooling down (no_deployment_available), at once, Retry-After to the soonest end (InternalServerError)', async () => {
    routed.up.at('east').always({ kind: 'status', status: 429, retryAfter: '20' });
    routed.up.at('west').always({ kind: 'status', status: 429, retryAfter: '5' });
    const last = await refused('pair');
    expect(last).toBeInstanceOf(Anthropic.RateLimitError);
    const cooled = await refused('pair');
    expect(cooled).toBeInstanceOf(Anthropic.InternalServerError);
    expectAnthropicError(cooled, 503, 'overloaded_error');
    expect((cooled.error as { error: { message: string } }).error.message).toMatch(/^no deployment of "pair" or its fallbacks can take the request now/);
    expect(cooled.headers?.get('retry-after')).toMatch(/^[45]$/);
    expect(routed.up.at('east').received.length + routed.up.at('west').received.length).toBe(2);
  });
});
