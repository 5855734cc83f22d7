/**
 * Known limits of the installed uWebSockets.js build
 * (@trufflesuite/uws-js-unofficial 20.30.0), pinned as they are today.
 *
 * This pins a limit of the installed uWS build, not behaviour anyone wants:
 * when a future build answers these requests (a 431 or a 400), or serves a
 * request pipelined behind a provider request, this test fails and must be
 * updated along with the README's known limits.
 *
 * 1. More than 48 header fields, or a bare CR or LF inside a header value:
 *    uWS's parser takes the request as incomplete, so no handler runs and
 *    nothing is answered; uWS's idle timeout (10 s, swept every 4 s, so 8 to
 *    12 s after the last byte) closes the connection. Nothing is forwarded,
 *    and other connections are served meanwhile.
 * 2. HTTP/1.0: this build's parser refuses the version (uWS since 2022-10,
 *    "Do not support HTTP/1.0"; builds from 2023-05 answer 505, later 400)
 *    and, like the above, answers nothing; the idle timeout closes the
 *    connection. A proxy in front must speak HTTP/1.1 to the gateway (nginx's
 *    `proxy_http_version` defaults to 1.0).
 * 3. No pipelining behind a provider request (docs/RESILIENCE.md): uWS closes
 *    a connection on which a request arrives while an answer is pending, and
 *    provider routes always answer later, so a chat request with anything
 *    pipelined behind it gets the connection closed, unanswered.
 */
import { describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';
import { raw, statusCodes, UWS_IDLE_CLOSE_MS, type RawResult } from './support/raw-http.js';
import { chatBody, expectLive } from './support/requests.js';
import { MARGIN_MS, sleep } from './support/waits.js';

const CHAT = '/v1/chat/completions';
/** The most header fields (Host included) this uWS build parses; measured: 48 answered, 49 not. */
const MAX_HEADER_FIELDS = 48;

describe('known limits of the installed uWS build', () => {
  const { gw, upstream } = useGateway();

  /** A chat request to the upstream-backed alias whose message is `marker`, with `fields` header fields in all. */
  function chat(marker: string, fields: number, extra = '', connection = 'close'): string {
    const body = chatBody('up-chat', {}, marker);
    const base = ['Host: x', `Authorization: Bearer ${gw.key}`, 'Content-Type: application/json', `Content-Length: ${body.length}`, `Connection: ${connection}`];
    for (let i = base.length; i < fields; i++) base.push(`X-Pad-${i}: v`);
    return `POST ${CHAT} HTTP/1.1\r\n${base.join('\r\n')}\r\n${extra}\r\n${body}`;
  }
  const forwarded = (marker: string) => upstream.requests.some((r) => r.body.includes(marker));

  it(`more than ${MAX_HEADER_FIELDS} header fields, a bare CR or a bare LF in a header value, HTTP/1.0: no answer, closed by the idle timeout, nothing forwarded, others served meanwhile`, async () => {
    const port = gw.gateway.port;
    const idle: Record<string, string> = {
      [`${MAX_HEADER_FIELDS + 1} header fields`]: chat('limit-one-over', MAX_HEADER_FIELDS + 1),
      '60 header fields': chat('limit-sixty', 60),
      'a bare CR in a header value': chat('limit-bare-cr', 6, 'X-Note: a\rb\r\n'),
      'a bare LF in a header value': chat('limit-bare-lf', 6, 'X-Note: a\nb\r\n'),
      'an HTTP/1.0 chat request': chat('limit-http10', 6).replace(' HTTP/1.1\r\n', ' HTTP/1.0\r\n'),
      'an HTTP/1.0 probe': 'GET /health/live HTTP/1.0\r\nHost: x\r\n\r\n',
    };
    const pending = new Map<string, Promise<RawResult>>();
    for (const [name, request] of Object.entries(idle)) pending.set(name, raw(port, request, 20_000));
    let open = pending.size;
    for (const p of pending.values()) void p.then(() => open--);

    // While those idle: a request at the limit is answered and forwarded, and other clients are served.
    const atLimit = await raw(port, chat('limit-at-max', MAX_HEADER_FIELDS), 5000);
    expect(statusCodes(atLimit.out)).toEqual([200]);
    expect(forwarded('limit-at-max')).toBe(true);
    let served = 0;
    while (open > 0) {
      const t0 = performance.now();
      await expectLive(gw, 'meanwhile', 1000);
      const reply = await gw.client().chat.completions.create({ model: 'mock-chat', messages: [{ role: 'user', content: 'meanwhile' }] });
      expect(reply.choices[0]?.message.content).toBe('This is a mock reply');
      // Not held up by the idle connections: each exchange ends long before they close.
      expect(performance.now() - t0).toBeLessThan(3000);
      served++;
      // Pacing the other traffic while the idle connections wait out uWS's timeout.
      await sleep(250);
    }
    expect(served).toBeGreaterThan(10);

    const figures: string[] = [];
    for (const [name, result] of pending) {
      const r = await result;
      figures.push(`${name}: ${r.out.length} bytes, closed by the server after ${r.ms.toFixed(0)} ms`);
      expect(r.out, name).toBe('');
      expect(r.closedByServer, name).toBe(true);
      expect(r.ms, name).toBeGreaterThan(UWS_IDLE_CLOSE_MS.min);
      expect(r.ms, name).toBeLessThan(UWS_IDLE_CLOSE_MS.max);
    }
    console.info(`[figures] known limits: ${figures.join('; ')}; ${served} other exchanges served meanwhile`);
    for (const marker of ['limit-one-over', 'limit-sixty', 'limit-bare-cr', 'limit-bare-lf', 'limit-http10']) expect(forwarded(marker), marker).toBe(false);
    expect(gw.gateway.context.pool.stats().inFlight).toBe(0);
  }, 30_000);

  it('a chat request with a request pipelined behind it: the connection closes at once, nothing answered, nothing left in flight', async () => {
    const probe = (connection: string) => `GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\n\r\n`;
    for (const [name, payload] of [
      ['chat + probe', chat('pipelined-first', 5, '', 'keep-alive') + probe('close')],
      ['chat + chat', chat('pipelined-first', 5, '', 'keep-alive') + chat('pipelined-second', 5)],
    ] as const) {
      const r = await raw(gw.gateway.port, payload, 3000);
      expect(r.out, name).toBe('');
      expect(r.closedByServer, name).toBe(true);
      expect(r.ms, name).toBeLessThan(MARGIN_MS);
    }
    await expect.poll(() => gw.gateway.context.pool.stats().inFlight, { timeout: 2000 }).toBe(0);
    expect(gw.gateway.context.counters.inFlight).toBe(0);
    await expect.poll(() => upstream.openRequests(), { timeout: 2000 }).toBe(0);
    expect(forwarded('pipelined-second')).toBe(false);
    // The other way round is served: a request answered at once, then a chat request.
    const r = await raw(gw.gateway.port, probe('keep-alive') + chat('pipelined-after-probe', 5), 3000);
    expect(statusCodes(r.out)).toEqual([200, 200]);
  });
});
