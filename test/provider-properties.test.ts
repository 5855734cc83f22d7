/**
 * Properties of the translating adapters (issues 23 and 25, Tests):
 * - any split of a provider's stream into chunks (the provider's parser,
 *   then the adapter's relay) gives the client the same stream: the golden
 *   streams of workers/providers/anthropic/, azure/, bedrock/ (encoded as
 *   AWS event-stream frames) and gemini/ (Gemini's
 *   with CRLF or LF, and with its error body after the events), cut at
 *   random bytes;
 * - any valid chat request maps to an Anthropic request that Anthropic
 *   takes, and to a Gemini request that Gemini takes (or is refused by
 *   name, and taken with drop_params): the fakes' checks
 *   (test/support/anthropic-upstream.ts, gemini-upstream.ts: the rules the
 *   official SDKs' fakes were proved with) find nothing to refuse.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { requestProblem } from './support/anthropic-upstream.js';
import { joinPieces } from '../protocol/channel.js';
import { SseParser } from '../workers/sse.js';
import { sseText } from '../workers/providers/golden.js';
import type { StreamParser, StreamRelay } from '../workers/providers/http-attempt.js';
import { TranslatingRelay } from '../workers/providers/translating-relay.js';
import { toMessagesRequest } from '../workers/providers/anthropic/request.js';
import { MessagesStreamTranslator, type StreamOptions } from '../workers/providers/anthropic/stream.js';
import { AzureRelay } from '../workers/providers/azure/index.js';
import { toGenerateContentRequest } from '../workers/providers/gemini/request.js';
import { GenerateContentStreamTranslator, type StreamOptions as GeminiStreamOptions } from '../workers/providers/gemini/stream.js';
import { GeminiStreamParser } from '../workers/providers/gemini/stream-parser.js';
import { GatewayError } from '../protocol/errors.js';
import { requestProblem as geminiProblem, RATE_LIMITED } from './support/gemini-upstream.js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { converseProblem } from './support/bedrock-upstream.js';
import { EventStreamParser, loadAwsLibraries, type AwsLibraries } from '../workers/providers/bedrock/aws.js';
import { toConverseRequest } from '../workers/providers/bedrock/request.js';
import { ConverseStreamTranslator, type StreamOptions as ConverseStreamOptions } from '../workers/providers/bedrock/stream.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The bytes a relay gives for `bytes` cut at `cuts`, as http-attempt.ts drives it (with the provider's parser); then the failure's message when it failed. */
function relayed(relay: StreamRelay, bytes: Uint8Array, cuts: number[], parser: StreamParser = new SseParser(1 << 20)): string {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let out = '';
  const take = (payload: ReturnType<StreamRelay['batch']>) => {
    if (payload !== null) out += decoder.decode(payload instanceof Uint8Array ? payload : joinPieces(payload));
  };
  const failed = () => {
    const failure = relay.failure?.() ?? null;
    if (failure !== null) throw failure;
  };
  try {
    let at = 0;
    for (const point of [...points, bytes.length]) {
      if (point <= at) continue;
      // A copy: the parser may keep a verbatim chunk, as it may undici's.
      take(relay.batch(parser.push(bytes.slice(at, point))));
      failed();
      at = point;
    }
    take(relay.end(parser.finish()));
    failed();
  } catch (err) {
    return `${out}\nfailed: ${(err as Error).message}`;
  }
  return out;
}

/** A golden stream: its events (each data as JSON), or, for a recorded one, the SSE text as recorded (`sse`). */
type StreamGolden = { name: string; events: Array<{ event?: string; data: unknown }>; sse?: string; options?: StreamOptions & GeminiStreamOptions };

function streams(dir: string): StreamGolden[] {
  const path = join(import.meta.dirname, '..', 'workers', 'providers', dir, 'golden');
  return readdirSync(path)
    .filter((name) => name.startsWith('stream-'))
    .map((name) => ({ name, ...(JSON.parse(readFileSync(join(path, name), 'utf8')) as Omit<StreamGolden, 'name'>) }));
}

const cutsArb = fc.array(fc.nat(), { maxLength: 40 });

/** The event-stream decoder (the codec's, loaded as the bedrock adapter loads it). */
let decode: AwsLibraries['decode'];
beforeAll(async () => {
  ({ decode } = await loadAwsLibraries());
});

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** A golden Bedrock stream as the bytes Bedrock sends: one event-stream frame per message. */
function eventStreamBytes(messages: Array<{ messageType?: string; name: string; payload: unknown }>): Uint8Array {
  const str = (value: string) => ({ type: 'string' as const, value });
  const frames = messages.map(({ messageType = 'event', name, payload }) => {
    if (messageType === 'error') return codec.encode({ headers: { ':message-type': str('error'), ':error-code': str(name), ':error-message': str(String(payload)) }, body: new Uint8Array(0) });
    const nameHeader = messageType === 'exception' ? ':exception-type' : ':event-type';
    return codec.encode({ headers: { ':message-type': str(messageType), [nameHeader]: str(name), ':content-type': str('application/json') }, body: fromUtf8(JSON.stringify(payload)) });
  });
  return Uint8Array.from(frames.flatMap((f) => [...f]));
}

/** A golden Bedrock stream: its messages, or, for a recorded one, the event-stream bytes as recorded (`eventStreamBase64`). */
type BedrockGolden = { name: string; messages: Array<{ messageType?: string; name: string; payload: unknown }>; eventStreamBase64?: string; options: ConverseStreamOptions };

function bedrockStreams(): BedrockGolden[] {
  const path = join(import.meta.dirname, '..', 'workers', 'providers', 'bedrock', 'golden');
  return readdirSync(path)
    .filter((name) => name.startsWith('stream-'))
    .map((name) => ({ name, ...(JSON.parse(readFileSync(join(path, name), 'utf8')) as Omit<BedrockGolden, 'name'>) }));
}

describe('any split of a provider stream gives the client the same stream', () => {
  for (const golden of streams('anthropic')) {
    it(`anthropic ${golden.name}`, () => {
      const bytes = encoder.encode(golden.sse ?? sseText(golden.events));
      const fresh = () => new TranslatingRelay(new MessagesStreamTranslator(golden.options as StreamOptions));
      const whole = relayed(fresh(), bytes, []);
      fc.assert(fc.property(cutsArb, (cuts) => relayed(fresh(), bytes, cuts) === whole), { numRuns: 200 });
    });
  }
  for (const golden of streams('azure')) {
    it(`azure ${golden.name}`, () => {
      // Azure's events are data only, as the service writes them; CRLF line ends are allowed too.
      const text = golden.events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('');
      const fresh = () => new AzureRelay();
      const whole = relayed(fresh(), encoder.encode(text), []);
      expect(whole).toContain('[DONE]');
      fc.assert(
        fc.property(cutsArb, fc.boolean(), (cuts, crlf) => relayed(fresh(), encoder.encode(crlf ? text.replaceAll('\n', '\r\n') : text), cuts) === whole),
        { numRuns: 200 },
      );
    });
  }
  for (const golden of bedrockStreams()) {
    it(`bedrock ${golden.name} (AWS event stream)`, () => {
      const bytes = golden.eventStreamBase64 === undefined ? eventStreamBytes(golden.messages) : new Uint8Array(Buffer.from(golden.eventStreamBase64, 'base64'));
      const run = (cuts: number[]) => relayed(new TranslatingRelay(new ConverseStreamTranslator(golden.options)), bytes, cuts, new EventStreamParser(decode, 1 << 20));
      const whole = run([]);
      expect(whole).toMatch(/\[DONE\]|failed: /);
      fc.assert(fc.property(cutsArb, (cuts) => run(cuts) === whole), { numRuns: 200 });
    });
  }
  for (const golden of streams('gemini')) {
    it(`gemini ${golden.name}, CRLF or LF, with or without Gemini's error body after the events`, () => {
      // Gemini's events are data only (CRLF line ends, as the service writes them); a failure mid-stream is a JSON body after them, outside the framing.
      const text = golden.events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join('');
      const body = `${JSON.stringify({ error: RATE_LIMITED }, null, 2)}\n`;
      const fresh = () => new TranslatingRelay(new GenerateContentStreamTranslator(golden.options as GeminiStreamOptions));
      const run = (bytes: Uint8Array, cuts: number[]) => relayed(fresh(), bytes, cuts, new GeminiStreamParser(1 << 20));
      for (const crlf of [true, false]) {
        for (const broken of [false, true]) {
          const bytes = encoder.encode((crlf ? text : text.replaceAll('\r\n', '\n')) + (broken ? body : ''));
          const whole = run(bytes, []);
          if (broken) expect(whole).toMatch(/failed: /);
          fc.assert(fc.property(cutsArb, (cuts) => run(bytes, cuts) === whole), { numRuns: 100 });
        }
      }
    });
  }
});

// ── valid chat requests ──

const text = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim().length > 0), fc.constantFrom('Hello', 'Wie spät ist es?', '東京'));
const blank = fc.constantFrom('', ' ', '\n');
const toolName = fc.stringMatching(/^[a-z][a-z_]{0,9}$/);

/** A user message: text, maybe as parts with blank parts and images among them. */
const userMessage = fc.oneof(
  text.map((t) => ({ role: 'user', content: t })),
  fc
    .tuple(text, fc.array(fc.oneof(blank.map((b) => ({ type: 'text', text: b })), fc.constant({ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } })), { maxLength: 3 }))
    .map(([t, extra]) => ({ role: 'user', content: [{ type: 'text', text: t }, ...extra] })),
);

/** An assistant turn: text (maybe blank), or tool calls answered by tool messages (results maybe blank). */
const assistantTurn = fc.oneof(
  fc.oneof(text, blank).map((t) => [{ role: 'assistant', content: t }]),
  fc.tuple(fc.oneof(fc.constant(null), text, blank), fc.array(fc.tuple(toolName, fc.dictionary(toolName, fc.oneof(fc.integer(), text)), fc.oneof(text, blank)), { minLength: 1, maxLength: 3 })).map(([content, calls]) => [
    { role: 'assistant', content, tool_calls: calls.map(([name, args], i) => ({ id: `call_${i}`, type: 'function', function: { name, arguments: JSON.stringify(args) } })) },
    ...calls.map(([, , result], i) => ({ role: 'tool', tool_call_id: `call_${i}`, content: result })),
  ]),
);

const chatRequest = fc
  .record(
    {
      system: fc.array(fc.record({ role: fc.constantFrom('system', 'developer'), content: fc.oneof(text, blank) }), { maxLength: 2 }),
      turns: fc.array(fc.tuple(userMessage, fc.option(assistantTurn, { nil: undefined })), { minLength: 1, maxLength: 4 }),
      last: userMessage,
      tools: fc.uniqueArray(toolName, { maxLength: 3 }),
      toolChoice: fc.constantFrom(undefined, 'auto', 'none', 'required', 'named'),
      parallel: fc.option(fc.boolean(), { nil: undefined }),
      format: fc.constantFrom(undefined, 'text', 'json_object', 'json_schema'),
      maxTokens: fc.option(fc.integer({ min: 1, max: 8192 }), { nil: undefined }),
      maxCompletionTokens: fc.option(fc.integer({ min: 1, max: 8192 }), { nil: undefined }),
      temperature: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
      topP: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
      stop: fc.option(fc.oneof(text, fc.array(fc.oneof(text, fc.constant('')), { maxLength: 3 })), { nil: undefined }),
      stream: fc.boolean(),
      user: fc.option(text, { nil: undefined }),
      extra: fc.dictionary(fc.stringMatching(/^x_[a-z]{1,6}$/), fc.jsonValue()),
    },
    { requiredKeys: ['turns', 'last'] },
  )
  .map((r) => {
    const messages = [...(r.system ?? []), ...r.turns.flatMap(([u, a]) => [u, ...(a ?? [])]), r.last];
    const body: Record<string, unknown> = { ...r.extra, model: 'alias', messages, n: 1, stream: r.stream };
    const tools = r.tools ?? [];
    if (tools.length > 0) {
      body.tools = tools.map((name) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: { q: { type: 'string' } } } } }));
      if (r.toolChoice === 'named') body.tool_choice = { type: 'function', function: { name: tools[0] } };
      else if (r.toolChoice !== undefined) body.tool_choice = r.toolChoice;
      if (r.parallel !== undefined) body.parallel_tool_calls = r.parallel;
    } else if (r.format !== undefined) {
      body.response_format = r.format === 'json_schema' ? { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string' } } } } } : { type: r.format };
    }
    const optional = { max_tokens: r.maxTokens, max_completion_tokens: r.maxCompletionTokens, temperature: r.temperature, top_p: r.topP, stop: r.stop, user: r.user };
    for (const [key, value] of Object.entries(optional)) if (value !== undefined) body[key] = value;
    if (r.stream) body.stream_options = { include_usage: true };
    return body;
  });

describe('any valid chat request maps to a Messages request Anthropic takes', () => {
  it('the fake\'s request check (Anthropic\'s rules) finds nothing, and no blank text block is sent', () => {
    fc.assert(
      fc.property(chatRequest, (body) => {
        const request = toMessagesRequest(body, { model: 'claude-fake-1', dropParams: false });
        const problem = requestProblem(request);
        if (problem !== null) throw new Error(`${problem}\n${JSON.stringify(request)}`);
        expect(JSON.stringify(request)).not.toMatch(/"type":"text","text":"\s*"/);
      }),
      { numRuns: 500 },
    );
  });
});

describe('any valid chat request maps to a generateContent request Gemini takes', () => {
  it("the fake's request check (Gemini's rules) finds nothing, and no blank text part is sent; what is refused is refused by name and taken with drop_params", () => {
    fc.assert(
      fc.property(chatRequest, (body) => {
        let request: Record<string, unknown>;
        try {
          request = toGenerateContentRequest(body, { dropParams: false });
        } catch (err) {
          if (!(err instanceof GatewayError) || err.code !== 'unsupported_parameter') throw err;
          request = toGenerateContentRequest(body, { dropParams: true });
        }
        const problem = geminiProblem(request);
        if (problem !== null) throw new Error(`${problem}\n${JSON.stringify(request)}`);
        expect(JSON.stringify(request)).not.toMatch(/"text":"\s*"/);
      }),
      { numRuns: 500 },
    );
  });
});

describe('any valid chat request maps to a Converse request Bedrock takes', () => {
  it("the fake's request check (Converse's rules) finds nothing, and no blank text block is sent (drop_params: what Converse cannot honour is dropped)", () => {
    fc.assert(
      fc.property(chatRequest, (body) => {
        const request = toConverseRequest(body, { dropParams: true });
        const problem = converseProblem(request);
        if (problem !== null) throw new Error(`${problem}\n${JSON.stringify(request)}`);
        expect(JSON.stringify(request)).not.toMatch(/"text":"\s*"/);
      }),
      { numRuns: 500 },
    );
  });
});
