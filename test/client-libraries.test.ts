/**
 * Real client libraries as clients (issue 24, "Tests"): the Vercel AI SDK
 * (`ai` 6 with `@ai-sdk/openai` 3, whose default model factory `openai(id)`
 * calls POST /v1/responses, its `openai.chat(id)`, and
 * `@ai-sdk/openai-compatible` 2) and LangChain's `ChatOpenAI` /
 * `OpenAIEmbeddings` (`@langchain/openai` 1.5), each at the last version
 * whose engines accept Node 20, with their defaults: chat, streams, a tool
 * round trip, structured output and embeddings without an encoding_format.
 * Upstreams: the mock provider, and the scripted fake of
 * test/support/responses-upstream.ts behind a chat-completions deployment
 * (translated) and a /responses one (passed through).
 */
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage, ToolMessage, type AIMessage } from '@langchain/core/messages';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { embed, embedMany, generateObject, generateText, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { UPSTREAM_KEY, expectNoRefusals, startTestGateway, type TestGateway } from './support/gateway.js';
import { responsesAliases, startResponsesUpstream, type ResponsesUpstream } from './support/responses-upstream.js';

let up: ResponsesUpstream;
let embedUp: FakeUpstream;
let gw: TestGateway;
beforeAll(async () => {
  up = await startResponsesUpstream();
  embedUp = await startFakeUpstream();
  gw = await startTestGateway({
    yaml: `
model_list:${responsesAliases(up)}
  - model_name: mock-embed
    params: { model: mock/embed-small, mock_embedding_dimensions: 8 }
  - model_name: up-embed
    params: { model: openai/fake-embed, api_base: ${embedUp.url}, api_key: ${UPSTREAM_KEY} }
`,
  });
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
  await embedUp?.close();
});
beforeEach(() => {
  up.reset();
  embedUp.reset();
});
afterEach(() => expectNoRefusals(embedUp, 'up-embed'));

/** The float answer for `input`, asked with encoding_format float: what every SDK default must decode to. */
async function floatEmbedding(model: string, input: string): Promise<number[]> {
  const res = await gw.client().embeddings.create({ model, input, encoding_format: 'float' });
  return res.data[0]?.embedding as number[];
}

const expectClose = (actual: readonly number[], expected: readonly number[]) => {
  expect(actual).toHaveLength(expected.length);
  actual.forEach((v, i) => expect(v).toBeCloseTo(expected[i] as number, 5));
  expect(actual.some((v) => v !== 0)).toBe(true);
};

const weatherTool = () =>
  tool({
    description: 'Weather of a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, temp_c: 18 }),
  });

describe('Vercel AI SDK: openai(id), the default model factory (POST /v1/responses)', () => {
  const provider = () => createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key });

  it('generateText on mock: the text and the usage', async () => {
    const result = await generateText({ model: provider()('mock-chat'), prompt: 'Hello there' });
    expect(result.text).toBe('This is a mock reply');
    expect(result.usage).toMatchObject({ inputTokens: 2, outputTokens: 5 });
    expect(result.finishReason).toBe('stop');
  });

  describe.each(['translated', 'passed'])('%s', (alias) => {
    const model = (): LanguageModel => provider()(alias);

    it('streamText: the text arrives in pieces and adds up', async () => {
      const result = streamText({ model: model(), prompt: 'Stream a reply for me' });
      const pieces: string[] = [];
      for await (const piece of result.textStream) pieces.push(piece);
      expect(pieces.length).toBeGreaterThan(1);
      expect(pieces.join('')).toBe('echo: Stream a reply for me');
      expect(await result.usage).toMatchObject({ outputTokens: 6 });
      expect(up.requests[0]?.path).toBe(alias === 'translated' ? '/v1/chat/completions' : '/v1/responses');
    });

    it('a tool round trip, whole and streamed: the call, its result sent back, the final answer', async () => {
      const whole = await generateText({ model: model(), prompt: 'What is the weather in Paris', tools: { get_weather: weatherTool() }, stopWhen: stepCountIs(3) });
      expect(whole.steps[0]?.toolCalls).toMatchObject([{ toolName: 'get_weather', input: { city: 'Paris' } }]);
      expect(whole.text).toBe('The tool said: {"city":"Paris","temp_c":18}');

      const streamed = streamText({ model: model(), prompt: 'What is the weather in Rome', tools: { get_weather: weatherTool() }, stopWhen: stepCountIs(3) });
      expect(await streamed.text).toBe('The tool said: {"city":"Rome","temp_c":18}');
      expect((await streamed.steps)[0]?.toolCalls).toMatchObject([{ toolName: 'get_weather', input: { city: 'Rome' } }]);
    });

    it('structured output: generateObject with a zod schema', async () => {
      const { object } = await generateObject({ model: model(), schema: z.object({ title: z.string(), rating: z.number(), done: z.boolean() }), prompt: 'Rate it' });
      expect(object).toEqual({ title: 'fake', rating: 1, done: true });
    });
  });

  it("a second turn carrying the first turn's text: the default (store: true) refers to it by item id, which a stateless gateway refuses saying what to do; store: false sends it whole", async () => {
    const first = await generateText({ model: provider()('translated'), prompt: 'First question' });
    const messages = [{ role: 'user' as const, content: 'First question' }, ...first.response.messages, { role: 'user' as const, content: 'Second question' }];
    await expect(generateText({ model: provider()('translated'), messages, maxRetries: 0 })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('store: false'),
    });
    const second = await generateText({ model: provider()('translated'), messages, providerOptions: { openai: { store: false } } });
    expect(second.text).toBe('echo: Second question');
    expect(up.requests.at(-1)?.json.messages).toEqual([
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: 'echo: First question' },
      { role: 'user', content: 'Second question' },
    ]);
  });

  it('embeddings with the SDK defaults: mock and an OpenAI-compatible upstream', async () => {
    for (const model of ['mock-embed', 'up-embed']) {
      const { embedding } = await embed({ model: provider().embedding(model), value: 'sunny day' });
      expectClose(embedding, await floatEmbedding(model, 'sunny day'));
      const { embeddings } = await embedMany({ model: provider().embedding(model), values: ['a', 'sunny day'] });
      expectClose(embeddings[1] as number[], await floatEmbedding(model, 'sunny day'));
    }
  });
});

describe('Vercel AI SDK on chat completions: openai.chat(id) and @ai-sdk/openai-compatible', () => {
  const models: Array<[string, (id: string) => LanguageModel]> = [
    ['openai.chat', (id) => createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key }).chat(id)],
    // Structured outputs on: without it the provider asks for json_object only, and the schema is left to the prompt.
    ['openai-compatible', (id) => createOpenAICompatible({ name: 'switchyard', baseURL: `${gw.url}/v1`, apiKey: gw.key, includeUsage: true, supportsStructuredOutputs: true })(id)],
  ];

  describe.each(models)('%s', (_name, model) => {
    it('generateText and streamText on mock, with usage', async () => {
      expect((await generateText({ model: model('mock-chat'), prompt: 'Hello there' })).text).toBe('This is a mock reply');
      const result = streamText({ model: model('mock-chat'), prompt: 'Hello there' });
      expect(await result.text).toBe('This is a mock reply');
      expect(await result.usage).toMatchObject({ outputTokens: 5 });
    });

    it('a streamed tool round trip and structured output through the chat upstream', async () => {
      const streamed = streamText({ model: model('translated'), prompt: 'What is the weather in Oslo', tools: { get_weather: weatherTool() }, stopWhen: stepCountIs(3) });
      expect(await streamed.text).toBe('The tool said: {"city":"Oslo","temp_c":18}');
      const { object } = await generateObject({ model: model('translated'), schema: z.object({ title: z.string() }), prompt: 'Name it' });
      expect(object).toEqual({ title: 'fake' });
    });
  });

  it('embeddings with the openai-compatible defaults', async () => {
    const provider = createOpenAICompatible({ name: 'switchyard', baseURL: `${gw.url}/v1`, apiKey: gw.key });
    const { embedding } = await embed({ model: provider.embeddingModel('mock-embed'), value: 'sunny day' });
    expectClose(embedding, await floatEmbedding('mock-embed', 'sunny day'));
  });
});

describe("LangChain's ChatOpenAI and OpenAIEmbeddings", () => {
  const chat = (model: string, extra: Record<string, unknown> = {}) => new ChatOpenAI({ model, apiKey: gw.key, configuration: { baseURL: `${gw.url}/v1` }, maxRetries: 0, ...extra });

  describe.each([
    ['chat completions', {}],
    ['the Responses API (useResponsesApi)', { useResponsesApi: true }],
  ] as const)('over %s', (_name, extra) => {
    it('invoke and stream on mock', async () => {
      const reply = await chat('mock-chat', extra).invoke('Hello there');
      expect(reply.text).toBe('This is a mock reply');
      expect(reply.usage_metadata).toMatchObject({ input_tokens: 2, output_tokens: 5 });
      const pieces: string[] = [];
      for await (const chunk of await chat('mock-chat', extra).stream('Hello there')) pieces.push(chunk.text);
      expect(pieces.join('')).toBe('This is a mock reply');
      expect(pieces.filter(Boolean).length).toBeGreaterThan(1);
    });

    it('a tool round trip: bindTools, the call, a ToolMessage back, the answer', async () => {
      const model = chat('translated', extra).bindTools([{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]);
      const question = new HumanMessage('What is the weather in Lima');
      const call = (await model.invoke([question])) as AIMessage;
      expect(call.tool_calls).toMatchObject([{ name: 'get_weather', args: { city: 'Lima' } }]);
      const id = call.tool_calls?.[0]?.id as string;
      const answer = await model.invoke([question, call, new ToolMessage({ tool_call_id: id, content: '{"temp_c":21}' })]);
      expect(answer.text).toBe('The tool said: {"temp_c":21}');
    });

    it('structured output: withStructuredOutput(zod)', async () => {
      const result = await chat('translated', extra).withStructuredOutput(z.object({ city: z.string(), sunny: z.boolean() })).invoke('Describe Lima');
      expect(result).toEqual({ city: 'fake', sunny: true });
    });
  });

  it('OpenAIEmbeddings with its defaults: embedQuery and embedDocuments, mock and an OpenAI-compatible upstream', async () => {
    for (const model of ['mock-embed', 'up-embed']) {
      const embeddings = new OpenAIEmbeddings({ model, apiKey: gw.key, configuration: { baseURL: `${gw.url}/v1` }, maxRetries: 0 });
      expectClose(await embeddings.embedQuery('sunny day'), await floatEmbedding(model, 'sunny day'));
      const [, second] = await embeddings.embedDocuments(['a', 'sunny day']);
      expectClose(second as number[], await floatEmbedding(model, 'sunny day'));
    }
  });
});
