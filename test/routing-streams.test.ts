/**
 * CONTRACT.md, Streams and the commit point: a stream is held until its
 * first chunk with content (or stream_commit_timeout); a failure before
 * that is retried and falls back invisibly (the client sees one clean
 * stream with one role chunk), a failure after it is one SSE error event.
 * Keep-alive comments start only after the commit. The real gateway, real
 * threads, scripted deployments; the openai SDK as a client where it reads
 * a stream.
 */
import http from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deploymentYaml, type Step } from './support/scripted-upstream.js';
import { chat, expectNoRefusals, startRouted, type Routed } from './support/routing.js';
import { chatBody } from './support/requests.js';
import { sseData, streamedContent } from './support/sse.js';
import { EARLY_MS, MARGIN_MS } from './support/waits.js';

const ROLE = /"role":"assistant"/g;

describe('the commit point', () => {
  let r: Routed;
  beforeAll(async () => {
    r = await startRouted(['east', 'west', 'slow', 'late'], (up) => `
model_list:${deploymentYaml('chat', up.at('east'), ', order: 1')}${deploymentYaml('chat', up.at('west'), ', order: 2')}${deploymentYaml('held', up.at('slow'))}${deploymentYaml('held', up.at('late'))}
server: { stream_keepalive_interval: 0.1 }
router_settings: { stream_commit_timeout: 0.4, cooldown_time: 0.01, allowed_fails: 100 }
`);
    // allowed_fails: the tests fail east on purpose, one call each; three within a minute would cool it (for
    // 10 ms), and on a loaded host the next test's call could land inside those 10 ms and go to west.
  });
  afterAll(() => r.close());
  beforeEach(() => r.up.reset());
  afterEach(() => expectNoRefusals(r.up));
  const at = (name: string) => r.up.at(name);

  it.each<{ how: string; step: Step }>([
    { how: 'a reset after the role chunk', step: { kind: 'reset-before-content' } },
    { how: 'an in-band error event', step: { kind: 'in-band-error' } },
    { how: 'a 500 before the head', step: { kind: 'status', status: 500 } },
  ])('before the first content, $how is retried invisibly: one clean stream, one role chunk', async ({ step }) => {
    at('east').script(step);
    const answer = await chat(r.gw, 'chat', { stream: true });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(answer.routing).toEqual({ deployment: 'west', attempts: '2', fallback: null });
    expect(streamedContent(answer.text)).toBe('from west');
    expect(answer.text.match(ROLE)).toHaveLength(1);
    expect(answer.text).not.toContain('"error"');
    expect(sseData(answer.text).at(-1)).toBe('[DONE]');
    expect(at('east').received).toHaveLength(1);
  });

  it('after the first content, a failure is one SSE error event: no other attempt', async () => {
    at('east').script({ kind: 'reset-after-content' });
    const answer = await chat(r.gw, 'chat', { stream: true });
    expect(answer.status).toBe(200);
    expect(answer.routing).toEqual({ deployment: 'east', attempts: '1', fallback: null });
    const events = sseData(answer.text);
    expect(streamedContent(answer.text)).toBe('from ');
    expect(events.filter((e) => e.startsWith('{"error"'))).toHaveLength(1);
    expect(JSON.parse(events.at(-1) as string).error.code).toBe('upstream_reset');
    expect(events).not.toContain('[DONE]');
    expect(at('west').received).toHaveLength(0);
  });

  it('the openai SDK reads a stream that was retried before its commit as one ordinary stream', async () => {
    at('east').script({ kind: 'in-band-error' });
    const stream = await r.gw.client().chat.completions.create({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('from west');
    expect(chunks.filter((c) => c.choices[0]?.delta.role === 'assistant')).toHaveLength(1);
  });

  it('a Responses API stream (the chat translation) retried before its commit is one clean event sequence: one response.created', async () => {
    at('east').script({ kind: 'reset-before-content' });
    const res = await r.gw.fetch('/v1/responses', { method: 'POST', body: JSON.stringify({ model: 'chat', input: 'hi', stream: true }) });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchyard-deployment')).toBe('west');
    expect(res.headers.get('x-switchyard-attempts')).toBe('2');
    expect(text.match(/event: response\.created/g)).toHaveLength(1);
    expect(text).toContain('event: response.completed');
    expect(text).toContain('west');
    expect(text).not.toContain('response.failed');
  });

  it('nothing reaches the client before the first content (no head, no keep-alive) until stream_commit_timeout; then the head and keep-alives', async () => {
    // Content 1.2 s after the role chunk; held 0.4 s, then committed: keep-alives (every 0.1 s) fill the rest.
    at('slow').always({ kind: 'slow-first-content', ms: 1200 });
    at('late').always({ kind: 'slow-first-content', ms: 1200 });
    const t0 = performance.now();
    const { headAt, pieces } = await timedStream(r.gw.url, r.gw.key, 'held');
    // Committed by stream_commit_timeout (0.4 s), no sooner.
    expect(headAt - t0).toBeGreaterThanOrEqual(400 - EARLY_MS);
    expect(headAt - t0).toBeLessThan(400 + MARGIN_MS);
    const first = pieces.find((p) => p.text.includes('"role"')) as { at: number; text: string };
    // The held role chunk leaves with the head, before any keep-alive; the first keep-alive a stream_keepalive_interval (0.1 s) later.
    const firstComment = pieces.find((p) => p.text.includes(': keepalive'));
    expect(firstComment).toBeDefined();
    expect((firstComment as { at: number }).at).toBeGreaterThanOrEqual(first.at);
    expect((firstComment as { at: number }).at - headAt).toBeGreaterThanOrEqual(100 - EARLY_MS);
    expect((firstComment as { at: number }).at - headAt).toBeLessThan(100 + MARGIN_MS);
    const all = pieces.map((p) => p.text).join('');
    expect(all.indexOf(': keepalive')).toBeGreaterThan(all.indexOf('"role"'));
    expect(streamedContent(all)).toMatch(/^from (slow|late)$/);
  });

  it('a failure after a commit by stream_commit_timeout is an SSE error event, not a retry', async () => {
    // The role chunk, then nothing: committed at 0.4 s; the reset after it is the client's to see.
    at('east').script({ kind: 'slow-first-content', ms: 5000 });
    const t0 = performance.now();
    const res = await r.gw.fetch('/v1/chat/completions', { method: 'POST', body: chatBody('chat', { stream: true }) });
    // The head leaves at the commit, stream_commit_timeout (0.4 s) after the start.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(400 - EARLY_MS);
    expect(performance.now() - t0).toBeLessThan(400 + MARGIN_MS);
    expect(res.status).toBe(200);
    expect([res.headers.get('x-switchyard-deployment'), res.headers.get('x-switchyard-attempts'), res.headers.get('x-switchyard-fallback')]).toEqual(['east', '1', null]);
    // Drop east's connection now: a failure after the commit.
    at('east').dropConnections();
    const events = sseData(await res.text());
    expect(JSON.parse(events.at(-1) as string).error.code).toBe('upstream_reset');
    expect(events.filter((e) => e.startsWith('{"error"'))).toHaveLength(1);
    expect(at('west').received).toHaveLength(0);
  });
});

/** A raw stream request: when the head arrived, and each piece of body with its time. */
function timedStream(base: string, key: string, model: string): Promise<{ headAt: number; pieces: Array<{ at: number; text: string }> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      const headAt = performance.now();
      const pieces: Array<{ at: number; text: string }> = [];
      res.setEncoding('utf8');
      res.on('data', (text: string) => pieces.push({ at: performance.now(), text }));
      res.on('end', () => resolve({ headAt, pieces }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(chatBody(model, { stream: true }, 'x'));
  });
}
