// npm run profile: where the gateway's CPU goes under load. Runs chat at concurrency 64 through
// the bare relay (loadtest/relay.mjs, no features) and each Switchyard mode (1 worker thread,
// inline) under `node --cpu-prof`, pinned like the bench (gateway on CPU 1, this load generator and
// the fake upstream on CPU 0), keeps only the samples taken while the load ran, and writes:
//   loadtest/profiles/<mode>-<thread>.cpuprofile   open in Chrome DevTools (Performance) or speedscope
//   loadtest/profiles/<mode>-<thread>.svg          a flame graph (width = CPU time, root at the bottom)
//   loadtest/PROFILE.md                            CPU per request by package beside the relay's (what
//                                                  each part costs over a featureless relay), then CPU
//                                                  by package and the top functions, per thread
// Env: PROFILE_SECONDS (default 5), PROFILE_CONNECTIONS (default 64), PROFILE_INTERVAL_US (default 1000),
// PROFILE_STREAM=1 (streams of 20 chunks, each stream in one upstream write, as the bench's streams
// target is measured, instead of whole answers). Chat at concurrency 64 writes PROFILE.md; any other
// scenario writes beside it, named after it: PROFILE_STREAM=1 → loadtest/PROFILE-streams.md and
// profiles/streams-<mode>-<thread>.*, PROFILE_CONNECTIONS=1 → PROFILE-chat-c1.md and profiles/chat-c1-*.
// PROFILE_MESSAGES=1: POST /v1/messages passed through to the fake's Anthropic API (the bench's Messages
// scenarios; the bare relay posts to the fake's /anthropic/v1/messages) → PROFILE-messages-chat.md, or
// with PROFILE_STREAM=1 PROFILE-messages-streams.md: set beside the chat run's to compare the two paths.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from './load.mjs';
import { START_ARGS } from './start-args.mjs';
import { costTable, flameGraphSvg, summarize, trimToWindow, unbundle } from './profile-tree.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const seconds = Number(process.env.PROFILE_SECONDS ?? 5);
const connections = Number(process.env.PROFILE_CONNECTIONS ?? 64);
const streaming = process.env.PROFILE_STREAM === '1';
const messages = process.env.PROFILE_MESSAGES === '1';
// V8's default, a sample every 1 ms: at 250 µs the profiler's own stack walks added a third to the
// gateway's busy time and half to its lead over the relay, deeper stacks costing more per sample.
const intervalUs = Number(process.env.PROFILE_INTERVAL_US ?? 1000);
const outDir = join(root, 'loadtest/profiles');
/** The scenario's name in its files, so that the profiles of each scenario are kept side by side; none for chat at c64. */
const scenarioKey = `${messages ? 'messages-' : ''}${streaming ? 'streams' : 'chat'}${connections === 64 ? '' : `-c${connections}`}`;
const filePrefix = scenarioKey === 'chat' ? '' : `${scenarioKey}-`;
const reportFile = join(root, `loadtest/PROFILE${filePrefix === '' ? '' : `-${scenarioKey}`}.md`);
const scenario = `${messages ? 'Messages passed through to anthropic, ' : ''}${streaming ? `streamed ${messages ? 'Messages (20 deltas)' : 'chat (20 chunks)'}` : 'chat'}`;
const hasTaskset = (() => { try { execFileSync('taskset', ['-V'], { stdio: 'ignore' }); return true; } catch { return false; } })();
const pinned = (cpu, args) => (hasTaskset ? ['taskset', ['-c', String(cpu), process.execPath, ...args]] : [process.execPath, args]);
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const children = new Set();
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

function start(cpu, args, env, pattern) {
  const [cmd, argv] = pinned(cpu, args);
  const child = spawn(cmd, argv, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d) => {
      out += d;
      const m = pattern.exec(out);
      if (!m) return;
      child.stdout.off('data', onData);
      child.stdout.resume(); // drained from here on, never kept (the access log)
      resolve({ child, port: Number(m[1]) });
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code} before it listened`)));
  });
}

const upstream = await start(0, ['loadtest/upstream.mjs', '0'], {}, /listening (\d+)/);
const dir = mkdtempSync(join(tmpdir(), 'switchyard-profile-'));
const config = join(dir, 'profile.yaml');
writeFileSync(config, `model_list:\n  - model_name: bench-chat\n    params: { model: openai/bench-model, api_base: http://127.0.0.1:${upstream.port}/v1, api_key: upstream-key }\n  - model_name: bench-claude\n    params: { model: anthropic/bench-model, api_base: http://127.0.0.1:${upstream.port}/anthropic, api_key: upstream-key }\n`);
// The relay passes the body on as it is, so it names the upstream's model; the gateways route by alias.
const bodyFor = (model) => JSON.stringify({ model, ...(messages ? { max_tokens: 256 } : {}), stream: streaming, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }] });
/** Where the load goes: the relay forwards the path as it is, so it is given the fake's own. */
const pathFor = (relay) => (messages ? (relay ? '/anthropic/v1/messages' : '/v1/messages') : '/v1/chat/completions');

mkdirSync(outDir, { recursive: true });
const report = [];
/** Per run, for the cost table: every thread's profile and the requests served in the window. */
const costRuns = [];
// The bare relay (loadtest/relay.mjs) first: the gateway's parts are read against a relay with no features.
// `mode` names the files, `label` the flame graphs and the cost table's column, `title` the section.
const modes = [
  { mode: 'relay', label: 'bare relay', title: 'The bare relay (calibration, no features)', args: ['loadtest/relay.mjs', '0', `http://127.0.0.1:${upstream.port}`], pattern: /listening (\d+)/, model: 'bench-model', key: null },
  { mode: '1-worker', label: 'Switchyard 1 worker', title: 'One worker thread (GATEWAY_WORKERS=1)', workers: '1' },
  { mode: 'inline', label: 'Switchyard inline', title: 'Inline (GATEWAY_WORKERS=0)', workers: '0' },
];
// This scenario's files from an earlier run; the other scenarios' stay.
for (const file of readdirSync(outDir)) if (modes.some(({ mode }) => file.startsWith(`${filePrefix}${mode}-`))) rmSync(join(outDir, file));
for (const { mode, label, title, workers, args, pattern, model = messages ? 'bench-claude' : 'bench-chat', key = 'profile-key' } of modes) {
  const profDir = join(dir, mode);
  const profiling = ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-interval=${intervalUs}`];
  const server = args
    ? await start(1, [...profiling, ...args], {}, pattern)
    // What npm start runs; unbundle() names each frame by the file it was bundled from.
    : await start(1, [...profiling, ...START_ARGS], {
      GATEWAY_CONFIG: config, GATEWAY_API_KEY: 'profile-key', HOST: '127.0.0.1', PORT: '0', GATEWAY_WORKERS: workers, LOG_LEVEL: 'info', GATEWAY_DRAIN_DELAY: '0',
    }, /"port":(\d+)/);
  const load = {
    url: `http://127.0.0.1:${server.port}`,
    path: pathFor(args !== undefined),
    body: bodyFor(model),
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(messages ? { 'anthropic-version': '2023-06-01' } : {}) },
    connections,
    warmupMs: 0,
  };
  // JIT warm-up outside the window.
  await run({ ...load, durationMs: 1000 });
  const from = monotonicUs();
  const result = await run({ ...load, durationMs: seconds * 1000 });
  const to = monotonicUs();
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM'); // both exit 0 on it (the gateway after draining): --cpu-prof writes a profile per thread
  await exited;
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).sort();
  report.push(`## ${title}\n\n${Math.round(result.rps).toLocaleString('en-US')} req/s over ${seconds} s at concurrency ${connections}, ${result.errors} errors (under the profiler, which slows it).\n`);
  const profiles = [];
  for (const file of files) {
    const profile = trimToWindow(unbundle(JSON.parse(readFileSync(join(profDir, file), 'utf8'))), from, to);
    profiles.push(profile);
    // The thread that ran the front is the one with the front's modules (src/front/) in it.
    const thread = files.length === 1 ? 'all' : JSON.stringify(profile).includes('/src/front/') ? 'front' : 'worker';
    const name = `${filePrefix}${mode}-${thread}`;
    const threadName = thread === 'all' ? 'the one thread' : `${thread} thread`;
    writeFileSync(join(outDir, `${name}.cpuprofile`), JSON.stringify(profile));
    writeFileSync(join(outDir, `${name}.svg`), flameGraphSvg(profile, `${label}, ${threadName}: ${scenario} at concurrency ${connections}`));
    report.push(`### ${thread === 'all' ? 'The one thread' : `The ${thread} thread`} (\`profiles/${name}.svg\`)\n\n${summarize(profile)}\n`);
  }
  // Requests finished in the window: the load generator's count (rps × seconds).
  costRuns.push({ name: profiles.length > 1 ? `${label} (both threads)` : label, profiles, requests: result.rps * seconds });
}
upstream.child.kill();
rmSync(dir, { recursive: true, force: true });

writeFileSync(reportFile, `# Where the CPU goes

Latest \`${messages ? 'PROFILE_MESSAGES=1 ' : ''}${streaming ? 'PROFILE_STREAM=1 ' : ''}${connections === 64 ? '' : `PROFILE_CONNECTIONS=${connections} `}npm run profile\` (${new Date().toISOString()}): ${scenario} at concurrency ${connections} for ${seconds} s after a 1 s
warm-up, gateway under \`node --cpu-prof\` on CPU 1, load generator and fake upstream on CPU 0. Only
samples taken during the measured window are kept. "Busy" leaves out idle time; a package's share
includes the native calls it makes (socket writes, the parser), a function's is its own (self) time.
Open a \`.cpuprofile\` in Chrome DevTools or speedscope, or an \`.svg\` in a browser (hover for names).

Read the native calls that wake another thread with care. V8's profiler samples a thread by the
clock, and every thread of the gateway shares CPU 1: a call that hands work to a thread which then
runs at once (\`postMessage\` waking the other isolate, \`writeBuffer\` handing the access log to
libuv's file threads) is charged for the time that thread ran. \`perf record -e cpu-clock -p <pid>\`
counts per thread instead; in one such run (inline, chat c64, access log on a pipe) libuv's threads
and the log writes together were under 0.5 % of the process's CPU, where this profile shows
\`writeBuffer\` near 10 % of the front thread's.

## What each part costs over a bare relay

Busy CPU per request, by package or module, in each run below: the profiler's busy time (every JavaScript
thread of the process) ÷ the requests the load generator finished in the window. The bare relay
(\`loadtest/relay.mjs\`: uWebSockets.js and undici's \`Pool.request\`, no features) is the floor; rows are
sorted by the most either mode spends beyond it. The relay's uWS calls count under
\`loadtest/relay.mjs\`, the gateway's under its front modules (\`http.js\` writes the answer). The
profiler's own cost is in every column alike; the sums are busy CPU under it, not the bench's CPU per
request. With one worker the two threads' times are added up, and as said above a thread can be charged
for time the other ran after it woke it: that column overstates the hop (\`frame-port.js\`, \`msgpackr\`).
Rows under 0.5 µs in every run are left out (they are in the totals).

${costTable(costRuns)}

${report.join('\n')}`);
console.log(`wrote ${reportFile} and ${outDir}/ (${readdirSync(outDir).length} files)`);
process.exit(0);
