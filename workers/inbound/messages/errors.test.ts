import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { ERRORS, type ErrorCode } from '../../../protocol/errors.js';
import { errorBody, errorEvent, errorTypeOf, fromCompatibleError, gatewayError } from '../../../protocol/anthropic-errors.js';
import { parseSse, sdkAnswering } from './golden.js';

/** CONTRACT.md, Anthropic Messages API (inbound), Errors: the type by status. */
const CONTRACT_TABLE: ReadonlyArray<readonly [number, string]> = [
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [413, 'request_too_large'],
  [429, 'rate_limit_error'],
  [529, 'overloaded_error'],
  [503, 'overloaded_error'],
  [500, 'api_error'],
  [502, 'api_error'],
  [504, 'api_error'],
];

/** The SDK's class for each status (its APIError.generate). */
const SDK_CLASS: Readonly<Record<number, unknown>> = {
  400: Anthropic.BadRequestError,
  401: Anthropic.AuthenticationError,
  403: Anthropic.PermissionDeniedError,
  404: Anthropic.NotFoundError,
  429: Anthropic.RateLimitError,
};

describe("errors in Anthropic's shape", () => {
  it('the type by status, as the contract table says', () => {
    for (const [status, type] of CONTRACT_TABLE) expect([status, errorTypeOf(status)]).toEqual([status, type]);
    // Where the contract is silent: Anthropic's own 402, and the caller's fault for any other 4xx.
    expect(errorTypeOf(402)).toBe('billing_error');
    expect(errorTypeOf(405)).toBe('invalid_request_error');
    expect(errorTypeOf(431)).toBe('invalid_request_error');
  });

  it('the body, request id included', () => {
    expect(JSON.parse(errorBody(400, '"max_tokens" is required', 'req_7'))).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: '"max_tokens" is required' }, request_id: 'req_7' });
    expect(Object.keys(JSON.parse(errorBody(500, 'x', null)))).toEqual(['type', 'error', 'request_id']);
  });

  it("every code of the catalogue answers with its own status and the status's type", () => {
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      const { status, body } = gatewayError({ code, message: 'm' }, 'req_1');
      expect(status).toBe(ERRORS[code].status);
      expect(JSON.parse(body).error.type).toBe(errorTypeOf(status));
    }
    expect(gatewayError({ code: 'no_deployment_available', message: 'm' }, null).status).toBe(503);
    expect(JSON.parse(gatewayError({ code: 'not-a-code', message: 'm' }, null).body).error.type).toBe('api_error');
  });

  it("a provider's 4xx in the compatible envelope keeps its status and message", () => {
    const body = JSON.parse(fromCompatibleError(422, JSON.stringify({ error: { message: 'Invalid schema for function', type: 'invalid_request_error', param: 'tools', code: null } }), 'req_2'));
    expect(body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'Invalid schema for function' }, request_id: 'req_2' });
    expect(JSON.parse(fromCompatibleError(400, 'Bad Request', null)).error.message).toBe('Bad Request');
    expect(JSON.parse(fromCompatibleError(404, '  ', null)).error.message).toBe('the provider answered with status 404');
  });

  it("the official SDK raises its class for the status, with the body's error type", async () => {
    for (const [status, type] of CONTRACT_TABLE) {
      const client = sdkAnswering(() => new Response(errorBody(status, 'why', 'req_9'), { status, headers: { 'content-type': 'application/json' } }));
      const err = (await client.messages.create({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(err).toBeInstanceOf(SDK_CLASS[status] ?? (status >= 500 ? Anthropic.InternalServerError : Anthropic.APIError));
      expect(err.status).toBe(status);
      expect((err.error as { error: { type: string } }).error.type).toBe(type);
    }
  });

  it('the stream error event', () => {
    expect(errorEvent('overloaded_error', 'Overloaded')).toBe('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n');
    expect(parseSse(errorEvent('api_error', 'x'))).toEqual([{ event: 'error', data: { type: 'error', error: { type: 'api_error', message: 'x' } } }]);
  });
});
