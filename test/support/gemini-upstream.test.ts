/**
 * The fake Gemini API read by the official SDK (@google/genai 2.32.0, the
 * newest whose engines accept Node 20), pointed at it directly
 * (`httpOptions.baseUrl`): if the SDK reads its answers, streams, function
 * calls with thought signatures, embeddings and errors as it reads the real
 * service's, the fake speaks the wire format the gateway's translator is
 * tested against.
 */
import { ApiError, FunctionCallingConfigMode, GoogleGenAI, type Content } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GEMINI_KEY, GEMINI_MODEL, RATE_LIMITED, startGeminiUpstream, type GeminiUpstream } from './gemini-upstream.js';

let up: GeminiUpstream;
let ai: GoogleGenAI;

beforeAll(async () => {
  up = await startGeminiUpstream();
  ai = new GoogleGenAI({ apiKey: GEMINI_KEY, httpOptions: { baseUrl: up.url } });
});
afterAll(() => up.close());
beforeEach(() => up.reset());

const WEATHER = { name: 'get_weather', description: 'Weather in a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

describe('the fake Gemini API, read by @google/genai', () => {
  it('generateContent: the text, usage, model version and response id; the key in x-goog-api-key, the request as the SDK writes it', async () => {
    up.script({ kind: 'content', candidates: [{ parts: [{ text: 'Thinking it over', thought: true }, { text: 'Bonjour.' }] }], usage: { promptTokenCount: 10, candidatesTokenCount: 3, thoughtsTokenCount: 4 } });
    const response = await ai.models.generateContent({ model: GEMINI_MODEL, contents: 'Hello', config: { systemInstruction: 'Be brief.', temperature: 0.5, maxOutputTokens: 50, stopSequences: ['END'] } });
    expect(response.text).toBe('Bonjour.');
    expect(response.candidates?.[0]?.finishReason).toBe('STOP');
    expect(response.usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 3, thoughtsTokenCount: 4, totalTokenCount: 17 });
    expect(response.modelVersion).toBe(GEMINI_MODEL);
    expect(response.responseId).toMatch(/^resp-fake-/);
    const [sent] = up.generations();
    expect(sent!.path).toBe(`/v1beta/models/${GEMINI_MODEL}:generateContent`);
    expect(sent!.headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(sent!.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
      systemInstruction: { role: 'user', parts: [{ text: 'Be brief.' }] },
      generationConfig: { temperature: 0.5, maxOutputTokens: 50, stopSequences: ['END'] },
    });
  });

  it('generateContentStream: text in pieces, then two whole function calls (a gemini-3 model signs the first), the finish reason and usage last', async () => {
    up.script({ kind: 'content', candidates: [{ parts: [{ text: 'Checking both cities.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] }], usage: { promptTokenCount: 40, candidatesTokenCount: 30 } });
    const stream = await ai.models.generateContentStream({
      model: 'gemini-3-pro-preview',
      contents: 'Weather in Paris and Rome?',
      config: { tools: [{ functionDeclarations: [WEATHER] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.AUTO } } },
    });
    const texts: string[] = [];
    const calls: Array<{ name?: string; args?: unknown; signature?: string }> = [];
    const finishes: unknown[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      const parts = chunk.candidates?.[0]?.content?.parts ?? [];
      for (const part of parts) {
        if (part.text) texts.push(part.text);
        if (part.functionCall) calls.push({ name: part.functionCall.name, args: part.functionCall.args, signature: part.thoughtSignature });
      }
      if (chunk.candidates?.[0]?.finishReason) finishes.push(chunk.candidates[0].finishReason);
      usage = chunk.usageMetadata ?? usage;
    }
    expect(texts.length).toBeGreaterThan(2);
    expect(texts.join('')).toBe('Checking both cities.');
    expect(calls.map((c) => [c.name, c.args])).toEqual([
      ['get_weather', { city: 'Paris' }],
      ['get_weather', { city: 'Rome' }],
    ]);
    expect(typeof calls[0]!.signature).toBe('string');
    expect(calls[1]!.signature).toBeUndefined();
    expect(finishes).toEqual(['STOP']);
    expect(usage).toMatchObject({ promptTokenCount: 40, candidatesTokenCount: 30, totalTokenCount: 70 });
    expect(up.generations()[0]!.path).toBe('/v1beta/models/gemini-3-pro-preview:streamGenerateContent');
    expect(up.generations()[0]!.query.get('alt')).toBe('sse');
  });

  it('a function-call round trip: the history with the signature the fake gave is taken; without it a gemini-3 model answers 400, as Gemini does', async () => {
    up.script({ kind: 'content', candidates: [{ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] }] });
    const config = { tools: [{ functionDeclarations: [WEATHER] }] };
    const first = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: 'Weather in Paris?', config });
    expect(first.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'Paris' } }]);
    const modelTurn = first.candidates![0]!.content as Content;
    const history: Content[] = [
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      modelTurn,
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '18 C' } } }] },
    ];
    up.script({ kind: 'content', candidates: [{ parts: [{ text: 'It is 18 C.' }] }] });
    const second = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: history, config });
    expect(second.text).toBe('It is 18 C.');
    const unsigned = history.map((c) => ({ ...c, parts: c.parts!.map(({ thoughtSignature: _drop, ...part }) => part) }));
    const refused = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: unsigned, config }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(400);
    expect((refused as ApiError).message).toContain('missing a thought_signature');
  });

  it("thinkingConfig as the SDK writes it: a budget in the model's range with includeThoughts is taken and the thoughts come back as thought parts; a budget out of range, 0 on a model that cannot stop thinking, or a budget with a level is 400", async () => {
    up.script({ kind: 'content', candidates: [{ parts: [{ text: 'Pondering.', thought: true }, { text: 'Yes.' }] }], usage: { promptTokenCount: 5, candidatesTokenCount: 1, thoughtsTokenCount: 9 } });
    const answer = await ai.models.generateContent({ model: GEMINI_MODEL, contents: 'Sure?', config: { thinkingConfig: { thinkingBudget: 24576, includeThoughts: true } } });
    expect(answer.text).toBe('Yes.');
    expect(answer.candidates![0]!.content!.parts!.filter((p) => p.thought === true).map((p) => p.text)).toEqual(['Pondering.']);
    expect(up.generations()[0]!.body.generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 24576, includeThoughts: true } });
    const refusal = async (model: string, thinkingConfig: Record<string, unknown>) => ((await ai.models.generateContent({ model, contents: 'x', config: { thinkingConfig } }).catch((e: unknown) => e)) as ApiError);
    for (const [model, config, message] of [
      [GEMINI_MODEL, { thinkingBudget: 31999 }, 'The thinking budget (31999) is invalid.'],
      ['gemini-2.5-pro', { thinkingBudget: 0 }, 'only works in thinking mode'],
      ['gemini-3-pro-preview', { thinkingBudget: 1024, thinkingLevel: 'HIGH' }, 'only set one of thinking budget and thinking level'],
    ] as const) {
      const refused = await refusal(model, config);
      expect(refused, model).toBeInstanceOf(ApiError);
      expect(refused.status).toBe(400);
      expect(refused.message).toContain(message);
    }
  });

  it('embedContent: batchEmbedContents with one request per text, the values in order', async () => {
    const response = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['first text', 'second text'], config: { outputDimensionality: 4 } });
    expect(response.embeddings).toHaveLength(2);
    expect(response.embeddings!.every((e) => e.values!.length === 4)).toBe(true);
    expect(response.embeddings![0]!.values).not.toEqual(response.embeddings![1]!.values);
    const [sent] = up.embeddings();
    expect(sent!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(sent!.body).toEqual({
      requests: [
        { content: { parts: [{ text: 'first text' }], role: 'user' }, outputDimensionality: 4, model: 'models/gemini-embedding-001' },
        { content: { parts: [{ text: 'second text' }], role: 'user' }, outputDimensionality: 4, model: 'models/gemini-embedding-001' },
      ],
    });
  });

  it('errors: a wrong key is 400 API_KEY_INVALID; a 429 carries its RetryInfo; a 500 is an ApiError of its status', async () => {
    const wrong = new GoogleGenAI({ apiKey: 'AIzaSy-wrong', httpOptions: { baseUrl: up.url } });
    const invalid = (await wrong.models.generateContent({ model: GEMINI_MODEL, contents: 'x' }).catch((e: unknown) => e)) as ApiError;
    expect(invalid).toBeInstanceOf(ApiError);
    expect(invalid.status).toBe(400);
    expect(invalid.message).toContain('API_KEY_INVALID');
    up.script({ kind: 'error', error: RATE_LIMITED }, { kind: 'error', error: { code: 500, status: 'INTERNAL', message: 'An internal error has occurred.' } });
    const limited = (await ai.models.generateContent({ model: GEMINI_MODEL, contents: 'x' }).catch((e: unknown) => e)) as ApiError;
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.message).error.details.find((d: { retryDelay?: string }) => d.retryDelay).retryDelay).toBe('7s');
    const internal = (await ai.models.generateContent({ model: GEMINI_MODEL, contents: 'x' }).catch((e: unknown) => e)) as ApiError;
    expect(internal.status).toBe(500);
  });

  it('a stream broken off by an error body after its events: the SDK yields the events, then throws an ApiError of the error\'s code', async () => {
    up.script({ kind: 'stream-error', error: RATE_LIMITED, afterContent: true });
    const stream = await ai.models.generateContentStream({ model: GEMINI_MODEL, contents: 'x' });
    const texts: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) texts.push(chunk.text ?? '');
    })().catch((e: unknown) => e);
    expect(texts).toEqual(['Partly']);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(429);
    expect((error as ApiError).message).toContain('RESOURCE_EXHAUSTED');
  });

  it('a stream that fails before any event: the SDK throws at its first read', async () => {
    up.script({ kind: 'stream-error', error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' }, afterContent: false });
    const stream = await ai.models.generateContentStream({ model: GEMINI_MODEL, contents: 'x' });
    const error = await stream.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
  });

  it('models.list: the free probe the gateway uses (pageSize 1)', async () => {
    const pager = await ai.models.list({ config: { pageSize: 1 } });
    expect(pager.page.map((m) => m.name)).toEqual([`models/${GEMINI_MODEL}`]);
    expect(up.received.at(-1)!.query.get('pageSize')).toBe('1');
  });
});
