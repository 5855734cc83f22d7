/** The scripted deployments the routing tests stand on: each step does what it says, and the record is true. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startScriptedUpstream, type ScriptedUpstream } from './scripted-upstream.js';

describe('scripted upstream', () => {
  let up: ScriptedUpstream;
  beforeAll(async () => {
    up = await startScriptedUpstream(['east', 'west']);
  });
  afterAll(() => up.close());
  beforeEach(() => up.reset());

  const post = (name: string, body: object, signal?: AbortSignal) =>
    fetch(`${up.at(name).url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal });

  it('follows its script one step a request, then its default; each deployment on its own', async () => {
    up.at('east').script({ kind: 'status', status: 503, retryAfter: '7' }, { kind: 'status', status: 429 });
    const first = await post('east', { model: 'm' });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('7');
    expect(((await first.json()) as { error: { message: string } }).error.message).toBe('east says 503');
    expect((await post('east', { model: 'm' })).status).toBe(429);
    const third = await post('east', { model: 'm' });
    expect(((await third.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe('from east');
    up.at('west').always({ kind: 'status', status: 500 });
    expect((await post('west', { model: 'm' })).status).toBe(500);
    expect((await post('west', { model: 'm' })).status).toBe(500);
    expect(up.at('east').received.map((r) => r.step)).toEqual(['status', 'status', 'ok']);
    expect(up.total()).toBe(5);
  });

  it('streams a role chunk, then content naming the deployment; the stream steps break it where they say', async () => {
    const text = async (res: Response) => (res.ok ? await res.text() : '');
    const whole = await text(await post('east', { model: 'm', stream: true }));
    expect(whole).toContain('"role":"assistant"');
    expect(whole).toContain('"content":"east"');
    expect(whole.endsWith('data: [DONE]\n\n')).toBe(true);

    up.at('east').script({ kind: 'in-band-error' });
    const inBand = await text(await post('east', { model: 'm', stream: true }));
    expect(inBand).toContain('data: {"error":');
    expect(inBand).not.toContain('"content":"east"');

    up.at('east').script({ kind: 'reset-before-content' }, { kind: 'reset-after-content' });
    for (let i = 0; i < 2; i++) {
      const res = await post('east', { model: 'm', stream: true });
      await expect(res.text()).rejects.toThrow();
    }
    // The deployment broke those off itself: done, not aborted by the client.
    expect(up.at('east').received.map((r) => r.aborted)).toEqual([false, false, false, false]);

    up.at('east').script({ kind: 'slow-first-content', ms: 300 });
    const t0 = performance.now();
    const slow = await post('east', { model: 'm', stream: true });
    const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
    const first = Buffer.from((await reader.read()).value as Uint8Array).toString();
    expect(first).toContain('"role":"assistant"');
    expect(performance.now() - t0).toBeLessThan(250);
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(rest).toContain('"content":"east"');
  });

  it('records a request the client abandoned as aborted, and what was in flight at once', async () => {
    up.at('west').always({ kind: 'hang' });
    const controllers = [new AbortController(), new AbortController()];
    const pending = controllers.map((c) => post('west', { model: 'm' }, c.signal).catch(() => null));
    await up.waitFor(() => up.at('west').inFlight() === 2);
    expect(up.at('west').maxInFlight()).toBe(2);
    for (const c of controllers) c.abort();
    await Promise.all(pending);
    await up.waitFor(() => up.at('west').aborted() === 2);
    expect(up.at('west').inFlight()).toBe(0);
    expect(up.at('west').received.every((r) => r.aborted && !r.done)).toBe(true);
  });

  it('latency delays the headers; reset-before-headers answers nothing', async () => {
    up.at('east').script({ kind: 'ok', latencyMs: 200 }, { kind: 'reset-before-headers' });
    const t0 = performance.now();
    expect((await post('east', { model: 'm' })).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    await expect(post('east', { model: 'm' })).rejects.toThrow();
  });
});
