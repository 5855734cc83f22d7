/**
 * The built-in mock provider: deterministic chat, streamed chat and
 * embeddings in the compatible format, with usage, and no network. Latency,
 * chunk count and chunk interval come from the route, so demos and load
 * tests can model a real provider. It honours cancellation and backpressure
 * like a real upstream.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { settingsOf } from '../../../protocol/config.js';
import type { MockSettings } from './config.js';
import type { Usage } from '../../../protocol/frames.js';
import type { AttemptSink, Provider, ProviderCall } from '../adapter.js';
import { embeddingList } from '../compatible.js';

const CREATED = 1_700_000_000;
const encoder = new TextEncoder();

export const mockProvider: Provider = {
  // No network: nothing to probe.
  probe: () => null,
  async call(call, sink) {
    const started = performance.now();
    // The mock's latency stands for an upstream's: it counts as upstream time, not the gateway's.
    call.sentAt = started;
    const mock = settingsOf<MockSettings>(call.upstream);
    if (mock.latencyMs > 0) await sleep(mock.latencyMs, undefined, { signal: call.control.signal });
    call.headersAt = performance.now();
    call.readAt = call.headersAt;
    if (mock.fault !== 'none') return injectFault(mock.fault);
    if (call.op === 'embeddings') {
      const { body, usage } = embeddings(call);
      sink.reply(200, 'application/json', [], encoder.encode(body), usage, performance.now() - started);
      return;
    }
    const prompt = promptText(call.body.messages);
    const words = replyWords(prompt, call.stream ? mock.streamChunks : Math.max(mock.streamChunks, 1));
    const usage: Usage = { prompt: countTokens(prompt), completion: words.length };
    const id = `chatcmpl-mock-${hash(prompt).toString(16)}`;
    const model = call.upstream.upstreamModel;
    if (!call.stream) {
      const body = {
        id,
        object: 'chat.completion',
        created: CREATED,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, logprobs: null, finish_reason: 'stop' }],
        usage: usageJson(usage),
      };
      sink.reply(200, 'application/json', [], encoder.encode(JSON.stringify(body)), usage, performance.now() - started);
      return;
    }
    await stream(call, sink, { id, model, words, usage, started });
  },
};

async function stream(call: ProviderCall, sink: AttemptSink, s: { id: string; model: string; words: string[]; usage: Usage; started: number }): Promise<void> {
  const { chunkIntervalMs } = settingsOf<MockSettings>(call.upstream);
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: s.id, object: 'chat.completion.chunk', created: CREATED, model: s.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  sink.head([]);
  const events = [chunk({ role: 'assistant', content: '' }, null), ...s.words.map((w) => chunk({ content: w }, null)), chunk({}, 'stop')];
  const includeUsage = (call.body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  if (includeUsage) {
    events.push(`data: ${JSON.stringify({ id: s.id, object: 'chat.completion.chunk', created: CREATED, model: s.model, choices: [], usage: usageJson(s.usage) })}\n\n`);
  }
  events.push('data: [DONE]\n\n');
  if (chunkIntervalMs === 0) {
    // No pacing asked for: one frame, as a fast upstream's single TCP read would give.
    sink.data(encoder.encode(events.join('')));
  } else {
    for (const event of events) {
      await call.flow.whenRunning();
      if (call.control.aborted) return;
      sink.data(encoder.encode(event));
      await sleep(chunkIntervalMs, undefined, { signal: call.control.signal });
    }
  }
  sink.end(includeUsage ? s.usage : null, performance.now() - s.started);
}

function embeddings(call: ProviderCall): { body: string; usage: Usage } {
  const raw = call.body.input;
  const inputs: unknown[] = Array.isArray(raw) ? raw : [raw];
  const requested = call.body.dimensions;
  const dims = typeof requested === 'number' && Number.isInteger(requested) && requested > 0 && requested <= 65_536 ? requested : settingsOf<MockSettings>(call.upstream).embeddingDimensions;
  let tokens = 0;
  const vectors = inputs.map((input) => {
    const text = typeof input === 'string' ? input : JSON.stringify(input);
    tokens += countTokens(text);
    return vector(text, dims);
  });
  const usage = { prompt: tokens, completion: 0 };
  return { body: JSON.stringify(embeddingList(vectors, call.upstream.upstreamModel, tokens, call.body.encoding_format === 'base64')), usage };
}

/** A unit vector seeded by the text: the same input always gives the same embedding. */
function vector(text: string, dims: number): number[] {
  let state = hash(text) || 1;
  const out = new Array<number>(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const value = ((state >>> 0) / 0xffffffff) * 2 - 1;
    out[i] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dims; i++) out[i] = Math.round((out[i] as number) * scale * 1e6) / 1e6;
  return out;
}

function promptText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  const last = messages[messages.length - 1] as { content?: unknown } | undefined;
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
}

/** `count` words of reply, the first ones echoing the prompt. */
function replyWords(prompt: string, count: number): string[] {
  const base = ['This', 'is', 'a', 'mock', 'reply', 'to:', ...prompt.split(/\s+/).filter(Boolean).slice(0, 16)];
  return Array.from({ length: count }, (_, i) => (i === 0 ? '' : ' ') + (base[i % base.length] as string));
}

function countTokens(text: string): number {
  return Math.max(1, text.split(/\s+/).filter(Boolean).length);
}

function usageJson(usage: Usage) {
  return { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion };
}

/** FNV-1a, 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Fails the way a broken adapter would: an error thrown into the call (a bug's TypeError), or, taking
 * this worker thread down, an uncaught async throw or an exit; or a loop that never ends, which holds
 * the thread until the front stops it.
 */
function injectFault(fault: 'crash' | 'exit' | 'throw' | 'hang'): Promise<never> {
  // eslint-disable-next-line no-empty -- the injected hang: a synchronous loop nothing but a terminate() ends
  if (fault === 'hang') for (;;) {}
  // The message carries a key-like string, as a careless adapter's might: the log must redact it.
  if (fault === 'throw') throw new TypeError('mock_fault: throw (injected) with sk-mockinjectedsecret0123456789');
  // In a worker thread, process.exit ends the thread, not the process.
  if (fault === 'exit') process.exit(1);
  setImmediate(() => {
    throw new Error('mock_fault: crash (injected)');
  });
  // Never answer: the crash ends this call along with its worker.
  return new Promise<never>(() => undefined);
}
