/**
 * The built server as a process (CONTRACT.md: Start, Environment, Config
 * file): `node dist/server.js` (spawnGateway) with a scrubbed environment, its stdout
 * parsed as pino JSON lines.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { spawnGateway, type GatewayProcess, type LogLine } from './support/gateway-process.js';
import { live } from './support/requests.js';
import { freePort } from './support/start-command.js';
import { until } from './support/waits.js';

/** "Within a few seconds of start". */
const PROMPT_MS = 5_000;

const running: GatewayProcess[] = [];

/** The built server with two workers and no drain delay, then `extra`. */
function start(extra: Record<string, string>): GatewayProcess {
  const p = spawnGateway({ env: { GATEWAY_WORKERS: '2', GATEWAY_DRAIN_DELAY: '0', ...extra } });
  running.push(p);
  return p;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, rej) => setTimeout(() => rej(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms))]);
}

function listeningLine(p: GatewayProcess): LogLine | undefined {
  return p.lines().find((l) => l.event === 'listening');
}

function countOccurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

/** The key is the last whitespace-separated token of the api_key_generated message. */
function keyFrom(line: LogLine): string {
  const msg = String(line.msg ?? '');
  const key = msg.trim().split(/\s+/).at(-1) ?? '';
  expect(key.length, `a key in ${JSON.stringify(line)}`).toBeGreaterThanOrEqual(20);
  return key;
}

const tmp = mkdtempSync(join(tmpdir(), 'switchyard-proc-'));

afterEach(async () => {
  for (const p of running.splice(0)) await p.stop(5_000);
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the built server process', () => {
  it('logs the listening line with its port while running (stdout is not held back until exit)', async () => {
    const p = start({ PORT: '0', GATEWAY_API_KEY: 'sk-proc-test-key-0123456789' });
    const line = await until(() => listeningLine(p), 'a "listening" line on stdout', PROMPT_MS, 25);
    expect(typeof line.port).toBe('number');
    expect(line.port).toBeGreaterThan(0);
    expect(await live(line.port as number)).toBe(true);
  });

  it('without GATEWAY_CONFIG or keys: serves the demo with a generated key logged once, usable at once', async () => {
    const p = start({ PORT: '0' });
    const listening = await until(() => listeningLine(p), 'a "listening" line on stdout', PROMPT_MS, 25);
    expect(listening.config).toBe('embedded demo config');
    const port = listening.port as number;

    const keyLines = p.lines().filter((l) => l.event === 'api_key_generated');
    expect(keyLines).toHaveLength(1);
    const key = keyFrom(keyLines[0]!);

    const client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0, timeout: 5_000 });
    const out = await client.chat.completions.create({ model: 'demo-chat', messages: [{ role: 'user', content: 'hello' }] });
    expect(Date.now() - p.startedAt).toBeLessThan(PROMPT_MS);
    expect(out.object).toBe('chat.completion');
    // The demo's mock: its eight words, the prompt's among them.
    expect(out.choices[0]?.message.content).toBe('This is a mock reply to: hello This');

    const models = await client.models.list();
    expect(models.data.map((m) => m.id).sort()).toEqual(['demo-chat', 'demo-embed', 'gpt-4o-mini']);

    const wrong = new OpenAI({ apiKey: `${key}x`, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0, timeout: 5_000 });
    await expect(wrong.chat.completions.create({ model: 'demo-chat', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 401 });

    p.child.kill('SIGTERM');
    expect((await withTimeout(p.exit, PROMPT_MS, 'exit')).code).toBe(0);
    const stdout = p.stdout();
    expect(countOccurrences(stdout, key)).toBe(1);
    const carrying = stdout.split('\n').filter((l) => l.includes(key));
    expect(carrying).toHaveLength(1);
    expect((JSON.parse(carrying[0]!) as LogLine).event).toBe('api_key_generated');
    expect(p.stderr()).not.toContain(key);
  });

  it('logs the generated key in exactly one stdout line and nowhere else (checked after shutdown)', async () => {
    const port = await freePort();
    const p = start({ PORT: String(port) });
    await until(() => live(port), '/health/live to answer 200', PROMPT_MS, 25);
    // a request with a wrong bearer, so access logging happens too
    const res = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer nope' } });
    expect(res.status).toBe(401);
    p.child.kill('SIGTERM');
    expect((await withTimeout(p.exit, PROMPT_MS, 'exit')).code).toBe(0);

    const lines = p.lines();
    expect(lines.filter((l) => '__raw' in l), 'every stdout line is JSON').toEqual([]);
    const keyLines = lines.filter((l) => l.event === 'api_key_generated');
    expect(keyLines).toHaveLength(1);
    const key = keyFrom(keyLines[0]!);
    expect(countOccurrences(p.stdout(), key)).toBe(1);
    expect(p.stderr()).not.toContain(key);
    const listening = lines.find((l) => l.event === 'listening');
    expect(listening?.config).toBe('embedded demo config');
    expect(listening?.port).toBe(port);
  });

  it('the start-up lines (the generated key, listening) are on stdout by the time /ready first answers 200, not a log flush later', async () => {
    const port = await freePort();
    // Inline: ready soonest after the key line, so a held-back batch would still be held.
    const p = start({ PORT: String(port), GATEWAY_WORKERS: '0' });
    await until(() => live(port, '/ready'), '/ready to answer 200', PROMPT_MS);
    // Lines written before the answer are in the pipe before it: this process reads them within a few ms, where a
    // batch held back would come with the logger's next flush (200 ms at most).
    const events = await until(() => {
      const now = p.lines().map((l) => l.event);
      return now.includes('api_key_generated') && now.includes('listening') && now;
    }, 'the key and listening lines on stdout', 20, 1);
    expect(events).toContain('api_key_generated');
    expect(events).toContain('listening');
  });

  it('does not generate or log a key when GATEWAY_API_KEY is set', async () => {
    const port = await freePort();
    const p = start({ PORT: String(port), GATEWAY_API_KEY: 'sk-proc-test-key-0123456789' });
    await until(() => live(port), '/health/live to answer 200', PROMPT_MS, 25);
    p.child.kill('SIGTERM');
    await withTimeout(p.exit, PROMPT_MS, 'exit');
    expect(p.lines().filter((l) => l.event === 'api_key_generated')).toEqual([]);
    expect(p.stdout()).not.toContain('sk-proc-test-key-0123456789');
  });

  describe('a bad config stops the start with a message naming the file and the path inside it', () => {
    it.each([
      ['a negative timeout', 'model_list:\n  - model_name: a\n    params: { model: openai/x, timeout: -1 }\n', 'model_list[0].params.timeout'],
      ['an unknown provider', 'model_list:\n  - model_name: a\n    params: { model: mock/ok }\n  - model_name: b\n    params: { model: foo/bar }\n', 'model_list[1].params.model'],
      ['not YAML', 'model_list: [unclosed\n', /\bline \d+/],
    ])('%s', async (_name, yaml, inside: string | RegExp) => {
      const file = join(tmp, `bad-${Math.random().toString(36).slice(2)}.yaml`);
      writeFileSync(file, yaml);
      const p = start({ PORT: '0', GATEWAY_CONFIG: file, GATEWAY_API_KEY: 'k' });
      const { code } = await withTimeout(p.exit, PROMPT_MS, 'the process to exit');
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      expect(p.stderr()).toContain(file);
      if (typeof inside === 'string') expect(p.stderr()).toContain(inside);
      else expect(p.stderr()).toMatch(inside);
      expect(p.lines().filter((l) => l.event === 'listening')).toEqual([]);
      expect(p.stdout()).not.toMatch(/listening/);
    });

    it('a GATEWAY_CONFIG that does not exist', async () => {
      const file = join(tmp, 'missing.yaml');
      const p = start({ PORT: '0', GATEWAY_CONFIG: file, GATEWAY_API_KEY: 'k' });
      const { code } = await withTimeout(p.exit, PROMPT_MS, 'the process to exit');
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      expect(p.stderr()).toContain(file);
      expect(p.stdout()).not.toMatch(/listening/);
    });

    it('a bad environment value names the variable', async () => {
      const p = start({ PORT: 'abc', GATEWAY_API_KEY: 'k' });
      const { code } = await withTimeout(p.exit, PROMPT_MS, 'the process to exit');
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      expect(p.stderr()).toMatch(/\bPORT\b/);
    });
  });

  it('a config with unsupported keys: one warning line per key, and the server still starts', async () => {
    const file = join(tmp, 'litellm.yaml');
    writeFileSync(
      file,
      `
model_list:
  - model_name: chat
    litellm_params: { model: mock/chat-small, max_budget: 10 }
litellm_settings:
  drop_params: true
  num_retries: 2
`,
    );
    const port = await freePort();
    const key = 'sk-proc-test-key-0123456789';
    const p = start({ PORT: String(port), GATEWAY_CONFIG: file, GATEWAY_API_KEY: key });
    await until(() => live(port), '/health/live to answer 200', PROMPT_MS, 25);
    const client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0, timeout: 5_000 });
    const out = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    expect(out.choices).toHaveLength(1);

    p.child.kill('SIGTERM');
    expect((await withTimeout(p.exit, PROMPT_MS, 'exit')).code).toBe(0);
    const lines = p.lines();
    const warnings = lines.filter((l) => l.level === 40 && typeof l.msg === 'string' && /not supported|unsupported|ignored/i.test(l.msg));
    expect(warnings, JSON.stringify(warnings)).toHaveLength(1);
    expect(warnings.filter((l) => String(l.msg).includes('model_list[0].litellm_params.max_budget'))).toHaveLength(1);
    // litellm_settings.num_retries routes (CONTRACT.md, Routing for high volume) and drop_params is every
    // deployment's default (Native providers): neither is warned about.
    expect(warnings.filter((l) => String(l.msg).includes('litellm_settings'))).toHaveLength(0);
    expect(lines.find((l) => l.event === 'listening')?.config).toBe(file);
  });

  it('SIGTERM stops the server with exit code 0 and closes the port', async () => {
    const port = await freePort();
    const p = start({ PORT: String(port), GATEWAY_API_KEY: 'k-sigterm' });
    await until(() => live(port), '/health/live to answer 200', PROMPT_MS, 25);
    p.child.kill('SIGTERM');
    const { code, signal } = await withTimeout(p.exit, PROMPT_MS, 'exit after SIGTERM');
    expect(signal).toBeNull();
    expect(code).toBe(0);
    expect(await live(port)).toBe(false);
  });
});
