/**
 * Graceful drain (SIGTERM) and reload (SIGHUP) of the real process:
 * `node dist/server.js` (spawnGateway) with its own config file, signals sent for real.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listeningSockets } from './support/listening-sockets.js';
import { expectNoRefusals } from './support/routing.js';
import { deploymentYaml, startScriptedUpstream } from './support/scripted-upstream.js';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnGateway, type GatewayProcess, type LogLine } from './support/gateway-process.js';
import { chatBody } from './support/requests.js';
import { sseData } from './support/sse.js';
import { EARLY_MS, MARGIN_MS, until } from './support/waits.js';

const KEY = 'sk-lifecycle-test-key';

interface Proc {
  child: GatewayProcess['child'];
  port: number;
  readonly lines: LogLine[];
  exit: Promise<number | null>;
}

const running: GatewayProcess[] = [];
afterEach(() => {
  for (const { child } of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function writeConfig(dir: string, yaml: string): string {
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** The built server on `configFile` with one worker; resolves the moment its `listening` line is read. */
async function startProcess(configFile: string, env: Record<string, string>): Promise<Proc> {
  const p = spawnGateway({ env: { GATEWAY_CONFIG: configFile, GATEWAY_API_KEY: KEY, GATEWAY_WORKERS: '1', ...env } });
  running.push(p);
  const { port } = await p.listening();
  return {
    child: p.child,
    port: port as number,
    get lines() {
      return p.lines();
    },
    exit: p.exit.then(({ code }) => code),
  };
}

async function post(port: number, model: string, stream: boolean): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', connection: 'close' },
    body: chatBody(model, { stream }, 'drain me'),
  });
}

/** Reads a whole SSE body, noting when the first chunk arrived. */
async function readStream(res: Response, onFirst?: () => void): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    if (text === '' && onFirst) onFirst();
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * Whether the listening socket (by inode) is closed. Not "a connect is refused": under parallel
 * tests another test's listen(0) may take the freed port at once.
 */
function socketClosed(sockets: string[], port: number): boolean {
  return !listeningSockets(port).some((inode) => sockets.includes(inode));
}

const LONG_STREAM = (chunks: number, intervalMs: number) => `
model_list:
  - model_name: slow-stream
    params: { model: mock/slow, mock_stream_chunks: ${chunks}, mock_chunk_interval_ms: ${intervalMs} }
`;

describe('graceful drain on SIGTERM', () => {
  it('turns /ready 503 at once, keeps /health/live 200, closes the socket after the delay, lets a live stream finish, exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-drain-'));
    // 16 chunks × 100 ms: the stream outlives the drain delay.
    const p = await startProcess(writeConfig(dir, LONG_STREAM(15, 100)), { GATEWAY_DRAIN_DELAY: '0.4', GATEWAY_DRAIN_TIMEOUT: '10' });
    expect((await fetch(`http://127.0.0.1:${p.port}/ready`)).status).toBe(200);
    const listening = listeningSockets(p.port);
    expect(listening).toHaveLength(1);

    const res = await post(p.port, 'slow-stream', true);
    expect(res.status).toBe(200);
    let signalledAt = 0;
    const streamDone = readStream(res, () => {
      signalledAt = performance.now();
      p.child.kill('SIGTERM');
    }).then((text) => ({ text, at: performance.now() }));

    // Ready turns 503 at once; liveness stays 200 (the socket is still open during the delay).
    await until(() => signalledAt > 0, 'the first chunk and SIGTERM');
    const ready = await until(async () => {
      const res = await fetch(`http://127.0.0.1:${p.port}/ready`, { headers: { connection: 'close' } });
      return res.status === 503 && res;
    }, '/ready to turn 503', MARGIN_MS);
    const readyAt = performance.now();
    expect(readyAt - signalledAt).toBeLessThan(MARGIN_MS);
    expect(((await ready.json()) as { checks: Array<{ name: string }> }).checks.map((c) => c.name)).toContain('shutting_down');
    const live = await fetch(`http://127.0.0.1:${p.port}/health/live`, { headers: { connection: 'close' } });
    expect(live.status).toBe(200);

    // After the delay (0.4 s), not before, the listen socket is closed: a new connection is refused.
    await until(() => socketClosed(listening, p.port), 'the listen socket closed', 400 + MARGIN_MS);
    const closedAt = performance.now();
    expect(closedAt - signalledAt).toBeLessThan(400 + MARGIN_MS);

    const { text, at: streamEndAt } = await streamDone;
    expect(text).toContain('data: [DONE]');
    expect(text).not.toContain('shutting_down');
    const code = await p.exit;
    const exitAt = performance.now();
    expect(code).toBe(0);
    const drained = p.lines.find((l) => l.event === 'drain_done');
    expect(drained).toMatchObject({ interrupted: 0 });
    expect(drained?.socketClosedAtMs as number).toBeGreaterThanOrEqual(400 - EARLY_MS);
    expect(drained?.socketClosedAtMs as number).toBeLessThan(400 + MARGIN_MS);
    expect(streamEndAt).toBeGreaterThan(closedAt);
    console.log(
      `drain timeline (ms after SIGTERM): ready 503 observed ≤${Math.round(readyAt - signalledAt)}, socket closed ${String(drained?.socketClosedAtMs)} (seen closed ≤${Math.round(closedAt - signalledAt)}), last stream done ${Math.round(streamEndAt - signalledAt)}, exit ${Math.round(exitAt - signalledAt)}`,
    );
  });

  it('ends a stream still open at the drain timeout with one shutting_down SSE event, then exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-drain-'));
    const p = await startProcess(writeConfig(dir, LONG_STREAM(1000, 100)), { GATEWAY_DRAIN_DELAY: '0', GATEWAY_DRAIN_TIMEOUT: '0.5' });
    const res = await post(p.port, 'slow-stream', true);
    let signalledAt = 0;
    const text = await readStream(res, () => {
      signalledAt = performance.now();
      p.child.kill('SIGTERM');
    });
    // Ended at the drain timeout (0.5 s after SIGTERM), not before.
    const tookMs = performance.now() - signalledAt;
    const events = sseData(text).filter((e) => e.startsWith('{"error"'));
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0] as string)).toMatchObject({ error: { type: 'gateway_error', code: 'shutting_down' } });
    expect(sseData(text).at(-1)).toBe(events[0]);
    expect(text).not.toContain('[DONE]');
    expect(tookMs).toBeGreaterThanOrEqual(500 - EARLY_MS);
    expect(tookMs).toBeLessThan(500 + MARGIN_MS);
    expect(await p.exit).toBe(0);
    expect(p.lines.some((l) => l.event === 'drain_interrupted')).toBe(true);
  });

  it('a second SIGTERM ends open streams at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-drain-'));
    const p = await startProcess(writeConfig(dir, LONG_STREAM(1000, 100)), { GATEWAY_DRAIN_DELAY: '0', GATEWAY_DRAIN_TIMEOUT: '60' });
    const res = await post(p.port, 'slow-stream', true);
    let secondAt = 0;
    const reading = readStream(res, () => {
      p.child.kill('SIGTERM');
      // The second once the first is under way: the process has logged its drain.
      void until(() => p.lines.some((l) => l.event === 'drain_started'), 'the drain_started line').then(() => {
        secondAt = performance.now();
        p.child.kill('SIGTERM');
      });
    }).then((t) => ({ t, at: performance.now() }));
    const { t: text, at: endedAt } = await reading;
    expect(secondAt).toBeGreaterThan(0);
    // At once (the drain timeout is 60 s).
    expect(endedAt - secondAt).toBeLessThan(MARGIN_MS);
    expect(JSON.parse(sseData(text).at(-1) as string)).toMatchObject({ error: { code: 'shutting_down' } });
    expect(await p.exit).toBe(0);
    expect(p.lines.some((l) => l.event === 'drain_forced')).toBe(true);
  });
});

describe('reload on SIGHUP', () => {
  const yaml = (alias: string, latencyMs = 0) => `
model_list:
  - model_name: ${alias}
    params: { model: mock/m, mock_latency_ms: ${latencyMs} }
`;
  const aliases = async (port: number) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    return ((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
  };
  const reloaded = (p: Proc) => until(() => p.lines.some((l) => l.event === 'config_reloaded'), 'the config_reloaded line', 3000, 25);
  const inFlight = async (port: number) => ((await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as { requests: { in_flight: number } }).requests.in_flight;

  it('swaps a valid config whole, in the front and the workers; a request in flight finishes on the config it started with', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
    const file = writeConfig(dir, yaml('first', 600));
    const p = await startProcess(file, {});
    expect(await aliases(p.port)).toEqual(['first']);
    const first = post(p.port, 'first', false);
    // Reload once the call is with the worker (its 600 ms latency running): its config frame comes after the call.
    await until(async () => (await inFlight(p.port)) === 1, 'the call in flight', 3000, 10);
    writeConfig(dir, yaml('second'));
    p.child.kill('SIGHUP');
    await reloaded(p);
    expect(await aliases(p.port)).toEqual(['second']);
    // The worker routes the new alias and no longer the old one…
    expect((await post(p.port, 'second', false)).status).toBe(200);
    expect((await post(p.port, 'first', false)).status).toBe(404);
    // …while the call that started before the reload completed on its config.
    const old = await first;
    expect(old.status).toBe(200);
    expect(((await old.json()) as { model: string }).model).toBe('m');
    const status = (await (await fetch(`http://127.0.0.1:${p.port}/status`)).json()) as { config_version: number };
    expect(status.config_version).toBe(2);
  });

  it('a SIGHUP sent the moment the listening line appears is handled, never the default action that kills the process', async () => {
    // A race: before the fix 2 of 12 such starts died of the signal, so several starts are tried.
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
    const file = writeConfig(dir, yaml('at-once'));
    for (let start = 0; start < 12; start++) {
      const p = await startProcess(file, {});
      p.child.kill('SIGHUP');
      await until(() => p.child.exitCode !== null || p.child.signalCode !== null || p.lines.some((l) => l.event === 'config_reloaded'), 'the reload or an exit', 3000, 25);
      expect({ start, exitCode: p.child.exitCode, signal: p.child.signalCode }).toEqual({ start, exitCode: null, signal: null });
      p.child.kill('SIGKILL');
      await p.exit;
    }
  });

  it('keeps the routing state of every deployment whose id survives (CONTRACT.md, Routing); a new id starts fresh', async () => {
    const up = await startScriptedUpstream(['east', 'west', 'south']);
    try {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
      const routed = (names: string[]) => `
model_list:${names.map((n, i) => deploymentYaml('chat', up.at(n), `, order: ${i + 1}`)).join('')}
router_settings: { cooldown_time: 60 }
`;
      const file = writeConfig(dir, routed(['east', 'west']));
      const p = await startProcess(file, { GATEWAY_WORKERS: '2' });
      up.at('east').script({ kind: 'status', status: 429 });
      const first = await post(p.port, 'chat', false);
      expect(first.headers.get('x-switchyard-deployment')).toBe('west');
      writeConfig(dir, routed(['east', 'south']));
      p.child.kill('SIGHUP');
      await reloaded(p);
      const status = (await (await fetch(`http://127.0.0.1:${p.port}/status/models/chat`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { deployments: Array<{ id: string; state: string; cooldown_remaining_ms: number; last_error: unknown }> };
      const byId = Object.fromEntries(status.deployments.map((d) => [d.id, d]));
      expect(Object.keys(byId)).toEqual(['east', 'south']);
      expect(byId.east?.state).toBe('cooling_down');
      expect(byId.east?.cooldown_remaining_ms).toBeGreaterThan(50_000);
      expect(byId.south).toMatchObject({ state: 'healthy', last_error: null });
      // Still cooling on every worker: the next call goes to the new deployment, east is not tried.
      const next = await post(p.port, 'chat', false);
      expect(next.headers.get('x-switchyard-deployment')).toBe('south');
      expect(up.at('east').received).toHaveLength(1);
      expectNoRefusals(up);
    } finally {
      await up.close();
    }
  });

  it('a reload that changes server.workers warns that it needs a restart, and /status keeps the mode the pool runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
    const file = writeConfig(dir, `server: { workers: 1 }\n${yaml('sized')}`);
    const p = await startProcess(file, { GATEWAY_WORKERS: '' }); // the file decides
    const mode = async () => ((await (await fetch(`http://127.0.0.1:${p.port}/status`)).json()) as { worker_mode: unknown }).worker_mode;
    expect(await mode()).toMatchObject({ workers: 1, reason: 'config', description: '1 worker: server.workers' });
    writeConfig(dir, `server: { workers: 3 }\n${yaml('sized')}`);
    p.child.kill('SIGHUP');
    await reloaded(p);
    expect(p.lines.filter((l) => l.event === 'reload_needs_restart').map((l) => l.setting)).toEqual(['workers']);
    expect(await mode()).toMatchObject({ workers: 1, reason: 'config', description: '1 worker: server.workers' });
  });

  it('keeps the old config and logs an error when the new file does not validate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
    const file = writeConfig(dir, yaml('kept'));
    const p = await startProcess(file, {});
    writeFileSync(file, 'model_list:\n  - model_name: broken\n    params: { model: no-provider-prefix }\n');
    p.child.kill('SIGHUP');
    await until(() => p.lines.some((l) => l.event === 'config_reload_failed'), 'the config_reload_failed line', 3000, 25);
    const failure = p.lines.find((l) => l.event === 'config_reload_failed');
    expect(String(failure?.error)).toContain(file);
    expect(String(failure?.error)).toContain('model_list[0].params.model');
    expect(await aliases(p.port)).toEqual(['kept']);
    expect((await post(p.port, 'kept', false)).status).toBe(200);
    const status = (await (await fetch(`http://127.0.0.1:${p.port}/status`)).json()) as { config_version: number };
    expect(status.config_version).toBe(1);
  });
});
