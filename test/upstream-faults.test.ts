/**
 * Every way an upstream can fail, in one table: the documented 502 (or one
 * SSE error event once a stream has committed), the call's slot freed, no
 * upstream request left open, and the next burst served at full speed.
 * One attempt per request (num_retries 0): how each failure is retried or
 * falls back is test/routing-failures.test.ts's subject.
 */
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../protocol/errors.js';
import type { Behaviour } from './support/fake-upstream.js';
import { UPSTREAM_KEY, useGateway } from './support/gateway.js';
import { REFUSED_PORT } from './support/start-command.js';
import { chatBody } from './support/requests.js';
import { sseData } from './support/sse.js';

interface Fault {
  readonly name: string;
  readonly behaviour: Behaviour | 'refused';
  readonly stream: boolean;
  readonly code: ErrorCode;
}

const FAULTS: readonly Fault[] = [
  { name: '500', behaviour: { kind: 'status', status: 500 }, stream: false, code: 'upstream_error' },
  { name: '503 before a stream', behaviour: { kind: 'status', status: 503 }, stream: true, code: 'upstream_error' },
  { name: 'connection refused', behaviour: 'refused', stream: false, code: 'upstream_unreachable' },
  { name: 'reset before headers', behaviour: { kind: 'reset-before-headers' }, stream: false, code: 'upstream_unreachable' },
  { name: 'headers never come', behaviour: { kind: 'hang' }, stream: false, code: 'upstream_headers_timeout' },
  { name: 'headers never come', behaviour: { kind: 'hang' }, stream: true, code: 'upstream_headers_timeout' },
  { name: 'body trickles', behaviour: { kind: 'trickle', intervalMs: 600 }, stream: false, code: 'upstream_idle_timeout' },
  { name: 'malformed JSON', behaviour: { kind: 'malformed-json' }, stream: false, code: 'upstream_invalid_response' },
  { name: 'not the compatible format', behaviour: { kind: 'not-compatible' }, stream: false, code: 'upstream_invalid_response' },
  { name: 'over the response limit', behaviour: { kind: 'huge', bytes: 300_000 }, stream: false, code: 'upstream_response_too_large' },
  { name: 'redirect', behaviour: { kind: 'redirect', location: 'http://127.0.0.1:1/elsewhere' }, stream: false, code: 'upstream_redirect' },
  { name: 'reset mid-stream', behaviour: { kind: 'stream-then-reset', after: 2 }, stream: true, code: 'upstream_reset' },
  { name: 'SSE without data: prefix', behaviour: { kind: 'stream-malformed', variant: 'no-data-prefix' }, stream: true, code: 'upstream_invalid_response' },
  { name: 'SSE data that is not JSON', behaviour: { kind: 'stream-malformed', variant: 'non-json-data' }, stream: true, code: 'upstream_invalid_response' },
  { name: 'SSE usage chunk that is not JSON', behaviour: { kind: 'stream-malformed', variant: 'bad-usage-json' }, stream: true, code: 'upstream_invalid_response' },
  // The whole answer in one socket read: its end is in before the relay starts (stop 11's CI flake).
  { name: 'SSE without data: prefix, all in one read', behaviour: { kind: 'stream-malformed', variant: 'no-data-prefix', whole: true }, stream: true, code: 'upstream_invalid_response' },
  { name: 'SSE data that is not JSON, all in one read', behaviour: { kind: 'stream-malformed', variant: 'non-json-data', whole: true }, stream: true, code: 'upstream_invalid_response' },
  { name: 'a huge SSE event without newline', behaviour: { kind: 'stream-malformed', variant: 'huge-no-newline', bytes: 400_000 }, stream: true, code: 'upstream_response_too_large' },
  { name: 'stream chunks stop coming', behaviour: { kind: 'stream-endless', intervalMs: 5_000 }, stream: true, code: 'upstream_idle_timeout' },
];

describe('upstream faults', () => {
  const { gw, upstream } = useGateway({
    resetUpstreams: false,
    gateway: async (upstream) => {
      const dead = REFUSED_PORT;
      const timeouts = 'headers_timeout: 0.3, idle_timeout: 0.3, timeout: 5';
      return {
        yaml: `
model_list:
  - model_name: faulty
    params: { model: openai/fake-model, api_base: ${upstream.url}, api_key: ${UPSTREAM_KEY}, ${timeouts} }
  - model_name: refused
    params: { model: openai/fake-model, api_base: http://127.0.0.1:${dead}/v1, api_key: k, ${timeouts} }
limits:
  max_response_body_bytes: 100000
router_settings: { num_retries: 0 }
`,
      };
    },
  });

  const body = (model: string, stream: boolean) => chatBody(model, { stream }, 'fault');

  for (const fault of FAULTS) {
    it(`${fault.name}${fault.stream ? ' (stream)' : ''} → ${fault.code}; slot freed; the next burst served at full speed`, async () => {
      const model = fault.behaviour === 'refused' ? 'refused' : 'faulty';
      if (fault.behaviour !== 'refused') upstream.behaveOnce(fault.behaviour);
      const res = await gw.fetch('/v1/chat/completions', { method: 'POST', body: body(model, fault.stream) });
      const text = await res.text();
      if (res.status === 200) {
        // The upstream had answered 200 to a stream: exactly one error event ends it, and no [DONE].
        expect(res.headers.get('content-type')).toContain('text/event-stream');
        const events = sseData(text);
        const errors = events.filter((e) => e.startsWith('{"error"'));
        expect(errors).toHaveLength(1);
        expect(JSON.parse(errors[0] as string)).toMatchObject({ error: { type: 'gateway_error', code: fault.code } });
        expect(events.at(-1)).toBe(errors[0]);
        expect(text).not.toContain('[DONE]');
      } else {
        expect(res.status).toBe(502);
        expect(JSON.parse(text)).toMatchObject({ error: { type: 'gateway_error', code: fault.code } });
      }
      // The slot is free and nothing is left open upstream.
      expect(gw.gateway.context.pool.stats().inFlight).toBe(0);
      expect(gw.gateway.context.counters.inFlight).toBe(0);
      expect(gw.gateway.context.counters.streamsOpen).toBe(0);
      await upstream.waitFor(() => upstream.openRequests() === 0, 2000);
      // Full speed: a burst of 20 answered at once, all well.
      const started = performance.now();
      const burst = await Promise.all(Array.from({ length: 20 }, () => gw.fetch('/v1/chat/completions', { method: 'POST', body: body('faulty', false) })));
      expect(burst.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
      expect(performance.now() - started).toBeLessThan(1000);
      expect(gw.gateway.context.pool.stats().restarts).toBe(0);
    });
  }
});
