/**
 * The Gemini translators against their golden files (golden/*.json:
 * Gemini's wire format in, the compatible form out), the stream's framing,
 * and what the translation refuses. UPDATE_GOLDEN=1 rewrites the expected
 * sides (read the diff).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../protocol/errors.js';
import { AttemptFailure } from '../../routing/failure.js';
import { decodedEvents } from '../../sse.js';
import { expectUnsupported, goldenFiles, refusalOf, requestGoldens, translatedStream } from '../golden.js';
import { toBatchEmbedRequest, toEmbeddingList, type EmbeddingOptions } from './embeddings.js';
import { geminiError } from './errors.js';
import type { Thinking } from '../adapter.js';
import { THINKING_BUDGET_MAX, THINKING_BUDGET_MIN, toGenerateContentRequest, type RequestOptions } from './request.js';
import { finishReason, toChatCompletion, type ResponseOptions } from './response.js';
import { GenerateContentStreamTranslator, type StreamOptions } from './stream.js';
import { GeminiStreamParser } from './stream-parser.js';
import { thoughtSignatureOf, toolCallId } from './tool-call-id.js';

const DIR = join(import.meta.dirname, 'golden');
const decoder = new TextDecoder();

describe('chat request → Gemini generateContent request (golden files)', () => {
  requestGoldens<RequestOptions>(DIR, 'gemini', toGenerateContentRequest);
});

describe('Gemini GenerateContentResponse → chat.completion (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; options: ResponseOptions; gemini: unknown; chat: unknown; usage: unknown }>(DIR, 'response-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const { completion, usage } = toChatCompletion(golden.case.gemini, golden.case.options);
      golden.expectAt('chat', completion);
      golden.expectAt('usage', usage);
    });
  }
});

interface StreamCase {
  about: string;
  options: StreamOptions;
  events: unknown[];
  chunks: unknown;
  failure: unknown;
}

/** Feeds the events one by one; the chunks sent until the end or the failure, and the failure. */
function translateEvents(options: StreamOptions, events: unknown[]): { chunks: unknown[]; failure: unknown } {
  const failureOf = (err: unknown) =>
    err instanceof AttemptFailure
      ? { kind: err.kind, code: err.code, status: err.status, message: err.message, headers: err.headers, retryAfterMs: err.retryAfterMs, answer: err.answer === null ? null : JSON.parse(decoder.decode(err.answer.body as Uint8Array)), detail: err.detail }
      : { code: (err as GatewayError).code, message: (err as Error).message };
  return translatedStream(new GenerateContentStreamTranslator(options), events.map((data) => ({ data })), failureOf);
}

describe('Gemini stream → chat.completion.chunk events (golden files)', () => {
  for (const golden of goldenFiles<StreamCase>(DIR, 'stream-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const { chunks, failure } = translateEvents(golden.case.options, golden.case.events);
      golden.expectAt('chunks', chunks);
      golden.expectAt('failure', failure);
      // CONTRACT.md, Streams: one role chunk per choice, each choice's first.
      const byChoice = new Map<number, Array<{ role?: string }>>();
      for (const chunk of chunks) {
        if (typeof chunk !== 'object') continue;
        for (const choice of (chunk as { choices: Array<{ index: number; delta: { role?: string } }> }).choices) byChoice.set(choice.index, [...(byChoice.get(choice.index) ?? []), choice.delta]);
      }
      for (const deltas of byChoice.values()) {
        expect(deltas.filter((d) => d.role !== undefined)).toHaveLength(1);
        expect(deltas[0]!.role).toBe('assistant');
      }
    });
  }
});

describe('Gemini errors', () => {
  for (const golden of goldenFiles<{ about: string; status: number; body: string; compatible: unknown; credentialsRejected: boolean; retryAfterMs: number }>(DIR, 'error-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const answer = geminiError(golden.case.status, golden.case.body);
      expect(answer.contentType).toBe('application/json');
      golden.expectAt('compatible', JSON.parse(decoder.decode(answer.body as Uint8Array)));
      golden.expectAt('credentialsRejected', answer.credentialsRejected ?? false);
      golden.expectAt('retryAfterMs', answer.retryAfterMs ?? 0);
    });
  }
});

describe('embeddings ↔ batchEmbedContents (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; model: string; openai: Record<string, unknown>; request: unknown; gemini: unknown; options: EmbeddingOptions; list: unknown }>(DIR, 'embeddings-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      golden.expectAt('request', toBatchEmbedRequest(golden.case.openai, golden.case.model));
      golden.expectAt('list', toEmbeddingList(golden.case.gemini, golden.case.options));
    });
  }

  it('token ids are refused (Gemini embeds text), whatever drop_params says', () => {
    expect(() => toBatchEmbedRequest({ input: [[1, 2, 3]] }, 'text-embedding-004')).toThrow(/input: .*token ids/);
  });

  it('an answer without one embedding per input is not the compatible format', () => {
    expect(() => toEmbeddingList({ embeddings: [{ values: [1] }] }, { model: 'm', base64: false, inputs: 2 })).toThrow(expect.objectContaining({ code: 'upstream_invalid_response' }));
  });
});

describe('thought signatures in tool call ids', () => {
  it('ride after __thought__ and come back out; an id without one has none', () => {
    expect(toolCallId('call_a_0', 'CiQB+sig/==')).toBe('call_a_0__thought__CiQB+sig/==');
    expect(thoughtSignatureOf('call_a_0__thought__CiQB+sig/==')).toBe('CiQB+sig/==');
    expect(toolCallId('call_a_0', undefined)).toBe('call_a_0');
    expect(thoughtSignatureOf('call_a_0')).toBeNull();
    expect(thoughtSignatureOf('call_a_0__thought__')).toBeNull();
  });
});

describe('finish reasons', () => {
  it.each([
    ['STOP', false, 'stop'],
    ['STOP', true, 'tool_calls'],
    ['MAX_TOKENS', false, 'length'],
    ['MAX_TOKENS', true, 'length'],
    ['SAFETY', false, 'content_filter'],
    ['RECITATION', false, 'content_filter'],
    ['BLOCKLIST', false, 'content_filter'],
    ['PROHIBITED_CONTENT', false, 'content_filter'],
    ['SPII', false, 'content_filter'],
    ['IMAGE_SAFETY', false, 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', false, 'stop'],
    ['UNEXPECTED_TOOL_CALL', false, 'stop'],
    ['LANGUAGE', false, 'stop'],
    ['OTHER', false, 'stop'],
    ['A_REASON_ADDED_LATER', false, 'stop'],
  ])('%s (function calls: %s) → %s', (reason, called, expected) => {
    expect(finishReason(reason, called)).toBe(expected);
  });
});

describe("the stream's framing: SSE events, then Gemini's error body outside them", () => {
  const encoder = new TextEncoder();
  const EVENT = 'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}]}';
  const ERROR = '{\n  "error": {\n    "code": 429,\n    "message": "Resource has been exhausted",\n    "status": "RESOURCE_EXHAUSTED"\n  }\n}\n';

  /** Every event the parser gives for `text` pushed in pieces of `size` bytes, then finished. */
  const parse = (text: string, size: number): string[] => {
    const parser = new GeminiStreamParser(1 << 20);
    const bytes = encoder.encode(text);
    const out: string[] = [];
    for (let at = 0; at < bytes.length; at += size) out.push(...decodedEvents(parser.push(bytes.subarray(at, at + size))).events);
    out.push(...parser.finish().events);
    return out;
  };

  it.each([1, 2, 3, 7, 1000])('an error body after CRLF events is one more event, whole (pieces of %i bytes)', (size) => {
    const events = parse(`${EVENT}\r\n\r\n${EVENT}\r\n\r\n${ERROR}`, size);
    expect(events).toHaveLength(3);
    expect(JSON.parse(events[2]!)).toEqual({ error: { code: 429, message: 'Resource has been exhausted', status: 'RESOURCE_EXHAUSTED' } });
  });

  it('an error body alone (a stream that failed before its first event), and after LF events', () => {
    expect(parse(ERROR, 5).map((e) => JSON.parse(e) as unknown)).toEqual([{ error: { code: 429, message: 'Resource has been exhausted', status: 'RESOURCE_EXHAUSTED' } }]);
    expect(parse(`${EVENT}\n\n${ERROR}`, 4)).toHaveLength(2);
  });

  it('a brace inside an event, or one split from its data: prefix, is not a body outside the framing', () => {
    for (const size of [1, 6, 7]) expect(parse(`${EVENT}\n\n${EVENT}\n\n`, size)).toHaveLength(2);
  });

  it('a body that never becomes JSON is handed on at the end (the translator refuses it), and one past the limit is refused', () => {
    expect(parse(`${EVENT}\n\n{"error": `, 3)).toEqual([EVENT.slice(6), '{"error": ']);
    const parser = new GeminiStreamParser(64);
    expect(() => parser.push(encoder.encode(`{"error": "${'x'.repeat(100)}`))).toThrow(expect.objectContaining({ code: 'upstream_response_too_large' }));
  });
});

describe('what the request translation refuses', () => {
  const base = { model: 'a', messages: [{ role: 'user', content: 'hi' }] };
  const refusal = (body: Record<string, unknown>) => refusalOf((body) => toGenerateContentRequest(body, { dropParams: false }), body);

  it.each([
    [{ logit_bias: { '1': 5 } }, 'logit_bias'],
    [{ logprobs: true }, 'logprobs'],
    [{ top_logprobs: 3 }, 'top_logprobs'],
    [{ reasoning_effort: 'low' }, 'reasoning_effort'],
    [{ parallel_tool_calls: false }, 'parallel_tool_calls'],
    [{ modalities: ['text', 'audio'] }, 'modalities'],
    [{ response_format: { type: 'grammar', grammar: 'x' } }, 'response_format.type'],
    [{ tools: [{ type: 'custom', custom: { name: 'g' } }] }, 'tools[0].type'],
    [{ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }, 'messages[0].content[0].type'],
    [{ messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
  ])('%j → 400 unsupported_parameter naming %s', (extra, param) => {
    expectUnsupported(refusal({ ...base, ...extra }), param);
  });

  it('a parameter the call marks droppable (a Messages translation\'s derived parallel_tool_calls) is dropped, not refused; the rest still are', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const droppable = new Set(['parallel_tool_calls']);
    const out = toGenerateContentRequest({ ...base, tools, parallel_tool_calls: false }, { dropParams: false, droppable });
    expect(out).not.toHaveProperty('parallel_tool_calls');
    expect(out.tools).toEqual([{ functionDeclarations: [{ name: 'f', parametersJsonSchema: { type: 'object' } }] }]);
    expectUnsupported(refusalOf((body) => toGenerateContentRequest(body, { dropParams: false, droppable }), { ...base, tools, parallel_tool_calls: false, logprobs: true }), 'logprobs');
  });

  it("a tool result whose call is not in the conversation, and arguments that are not a JSON object, are the caller's 400", () => {
    const orphan = refusal({ ...base, messages: [{ role: 'tool', tool_call_id: 'call_x', content: '1' }] });
    expect(orphan.code).toBe('invalid_request');
    expect(orphan.message).toContain('messages[0].tool_call_id');
    const args = refusal({ ...base, messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] });
    expect(args.code).toBe('invalid_request');
    expect(args.message).toContain('messages[0].tool_calls[0].function.arguments');
  });
});

describe("a Messages call's thinking → thinkingConfig (ProviderCall.thinking)", () => {
  const base = { model: 'alias', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 30000 };
  const config = (thinking?: Thinking) => (toGenerateContentRequest(base, { dropParams: false, ...(thinking === undefined ? {} : { thinking }) }).generationConfig as Record<string, unknown>).thinkingConfig;

  it('a budget is thinkingBudget, clamped into the range every Gemini model takes; includeThoughts only when the text is shown', () => {
    expect(config({ type: 'budget', budgetTokens: 4000, shown: true })).toEqual({ thinkingBudget: 4000, includeThoughts: true });
    expect(config({ type: 'budget', budgetTokens: 4000, shown: false })).toEqual({ thinkingBudget: 4000 });
    expect(config({ type: 'budget', budgetTokens: 31999, shown: true })).toEqual({ thinkingBudget: THINKING_BUDGET_MAX, includeThoughts: true });
    expect(config({ type: 'budget', budgetTokens: 0, shown: true })).toEqual({ thinkingBudget: THINKING_BUDGET_MIN, includeThoughts: true });
    expect([THINKING_BUDGET_MIN, THINKING_BUDGET_MAX]).toEqual([1024, 24576]);
  });

  it('adaptive leaves the amount to the model (no budget); disabled, and no thinking at all, send no thinkingConfig', () => {
    expect(config({ type: 'adaptive', shown: true })).toEqual({ includeThoughts: true });
    expect(config({ type: 'adaptive', shown: false })).toBeUndefined();
    expect(config({ type: 'disabled' })).toBeUndefined();
    expect(config()).toBeUndefined();
  });

  it('reasoning_effort, a chat caller\'s, is still refused: only a Messages call\'s thinking reaches the budget', () => {
    expectUnsupported(refusalOf((body) => toGenerateContentRequest(body, { dropParams: false, thinking: { type: 'budget', budgetTokens: 2048, shown: true } }), { ...base, reasoning_effort: 'high' }), 'reasoning_effort');
  });

  it('thought parts are carried only when the request asked for them', () => {
    const answer = { candidates: [{ content: { parts: [{ text: 'pondering', thought: true }, { text: 'Hi.' }], role: 'model' }, finishReason: 'STOP', index: 0 }], responseId: 'r' };
    const message = (thoughts: boolean | undefined) => (toChatCompletion(answer, { created: 1, model: 'm', idSeed: 's', ...(thoughts === undefined ? {} : { thoughts }) }).completion.choices as Array<{ message: Record<string, unknown> }>)[0]!.message;
    expect(message(true)).toEqual({ role: 'assistant', content: 'Hi.', refusal: null, reasoning_content: 'pondering' });
    expect(message(false)).toEqual({ role: 'assistant', content: 'Hi.', refusal: null });
    expect(message(undefined)).toEqual({ role: 'assistant', content: 'Hi.', refusal: null });
  });

  it("a stream's thought is content for the commit gate when carried, and nothing when not", () => {
    const event = JSON.stringify({ candidates: [{ content: { parts: [{ text: 'pondering', thought: true }], role: 'model' }, index: 0 }], responseId: 'r' });
    const shown = new GenerateContentStreamTranslator({ created: 1, model: 'm', idSeed: 's', includeUsage: false, thoughts: true });
    expect(shown.event(null, event)).toContain('"reasoning_content":"pondering"');
    expect(shown.contentSent).toBe(true);
    const hidden = new GenerateContentStreamTranslator({ created: 1, model: 'm', idSeed: 's', includeUsage: false });
    expect(hidden.event(null, event)).not.toContain('pondering');
    expect(hidden.contentSent).toBe(false);
  });
});
