/**
 * Request framing and ambiguous headers, over raw TCP (fetch cannot send
 * these): smuggling shapes are refused, pipelining works.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';

/** Writes raw bytes, returns everything the server sent until it closed (or 1.5 s passed). */
function raw(port: number, payload: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => socket.destroy(), 1500);
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('error', () => undefined);
    socket.write(payload);
  });
}

// Responses follow each other without a newline, so status lines are not at line starts.
const statusLines = (response: string) => (response.match(/HTTP\/1\.1 \d{3}(?= )/g) ?? []);

describe('request framing', () => {
  const { gw, upstream } = useGateway({ resetUpstreams: false });

  it('refuses two Content-Length headers with a 400 and closes; nothing reaches the upstream', async () => {
    const before = upstream.requests.length;
    const body = JSON.stringify({ model: 'up-chat', messages: [{ role: 'user', content: 'x' }] });
    const out = await raw(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: ${body.length}\r\nContent-Length: 5\r\n\r\n${body}`);
    expect(statusLines(out)).toEqual(['HTTP/1.1 400']);
    expect(out).toMatch(/connection: close/i);
    expect(out).toContain('"code":"invalid_request"');
    expect(out).toContain('Content-Length header appears more than once');
    expect(upstream.requests.length).toBe(before);
  });

  it('never serves a request with both Content-Length and Transfer-Encoding', async () => {
    const before = upstream.requests.length;
    const out = await raw(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\n\r\n`);
    // uWS drops the connection outright; either way no request is served, and no smuggled second one.
    expect(statusLines(out).filter((l) => l === 'HTTP/1.1 200')).toEqual([]);
    expect(upstream.requests.length).toBe(before);
  });

  it('refuses two Authorization headers even when one is right', async () => {
    const out = await raw(gw.port, `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.key}\r\nAuthorization: Bearer wrong\r\n\r\n`);
    expect(statusLines(out)).toEqual(['HTTP/1.1 400']);
    expect(out).toContain('Authorization header appears more than once');
  });

  it('answers pipelined requests in order on one connection', async () => {
    const out = await raw(gw.port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nX-Request-ID: first\r\n\r\nGET /status HTTP/1.1\r\nHost: x\r\nX-Request-ID: second\r\nConnection: close\r\n\r\n');
    expect(statusLines(out)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(out.indexOf('x-request-id: first')).toBeLessThan(out.indexOf('x-request-id: second'));
    expect(out).toContain('"object":"health"');
    expect(out).toContain('"object":"status"');
  });
});
