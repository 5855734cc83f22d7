/**
 * The fake Bedrock runtime API read by the official SDK
 * (@aws-sdk/client-bedrock-runtime, static test credentials, `endpoint`
 * pointed at the fake): every request the SDK signs passes the fake's
 * SigV4 check, and the SDK reads the fake's Converse answers, its
 * ConverseStream event-stream frames (tool use included), its
 * InvokeModel embeddings and its errors and exception frames as it reads
 * the real service's. So the fake checks signatures and speaks the wire
 * format the way AWS does, and the gateway is tested against that.
 */
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, InvokeModelCommand, InvokeModelWithResponseStreamCommand, ListAsyncInvokesCommand, type ConverseStreamOutput, type ResponseStream } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AWS_KEYS, AWS_SESSION_KEYS, BEDROCK_API_KEY, BEDROCK_REGION, startBedrockUpstream, vectorOf, type BedrockUpstream } from './bedrock-upstream.js';

let up: BedrockUpstream;
let client: BedrockRuntimeClient;

/** The SDK speaks HTTP/2 to bedrock-runtime by default; the service (and the fake, and the gateway) speak HTTP/1.1 too. */
const sdk = (options: Partial<ConstructorParameters<typeof BedrockRuntimeClient>[0]> = {}) =>
  new BedrockRuntimeClient({ region: BEDROCK_REGION, endpoint: up.url, credentials: AWS_KEYS, maxAttempts: 1, requestHandler: new NodeHttpHandler(), ...options });

beforeAll(async () => {
  up = await startBedrockUpstream();
  client = sdk();
});
afterAll(async () => {
  client.destroy();
  await up.close();
});
beforeEach(() => up.reset());

const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const WEATHER = { toolSpec: { name: 'get_weather', description: 'Weather in a city', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } } };

/** Every event of a ConverseStream, as the SDK hands them out. */
async function events(stream: AsyncIterable<ConverseStreamOutput> | undefined): Promise<ConverseStreamOutput[]> {
  const out: ConverseStreamOutput[] = [];
  for await (const event of stream ?? []) out.push(event);
  return out;
}

describe('the fake Bedrock runtime API, read by @aws-sdk/client-bedrock-runtime', () => {
  it('Converse: a signed request passes the SigV4 check; the SDK reads the answer, stop reason, usage and request id', async () => {
    const answer = await client.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi there' }] }], inferenceConfig: { maxTokens: 50, temperature: 0.5 } }));
    expect(answer.output?.message?.content).toEqual([{ text: 'Hello! You said: Hi there' }]);
    expect(answer.stopReason).toBe('end_turn');
    expect(answer.usage).toEqual({ inputTokens: 12, outputTokens: 6, totalTokens: 18 });
    expect(answer.$metadata.requestId).toMatch(/^fake-0001/);
    expect(up.refused).toEqual([]);
    const [seen] = up.converse();
    expect(seen?.modelId).toBe(MODEL);
    expect(String(seen?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/);
  });

  it('ConverseStream: real event-stream frames with text, a tool use whose input fragments the SDK hands out, messageStop and metadata', async () => {
    up.script({
      kind: 'message',
      content: [{ reasoningContent: { reasoningText: { text: 'They want weather.', signature: 'sig' } } }, { text: 'Checking the weather.' }, { toolUse: { toolUseId: 'tooluse_01', name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } } }],
      usage: { inputTokens: 30, outputTokens: 20, cacheReadInputTokens: 100 },
    });
    const answer = await client.send(new ConverseStreamCommand({ modelId: MODEL, toolConfig: { tools: [WEATHER] }, messages: [{ role: 'user', content: [{ text: 'Weather in Paris?' }] }] }));
    const all = await events(answer.stream);
    expect(all[0]).toEqual({ messageStart: { role: 'assistant' } });
    const text = all.map((e) => e.contentBlockDelta?.delta?.text ?? '').join('');
    expect(text).toBe('Checking the weather.');
    expect(all.find((e) => e.contentBlockStart !== undefined)?.contentBlockStart).toEqual({ contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_01', name: 'get_weather' } } });
    const input = all.map((e) => e.contentBlockDelta?.delta?.toolUse?.input ?? '').join('');
    expect(JSON.parse(input)).toEqual({ city: 'Paris', unit: 'celsius' });
    expect(all.some((e) => e.contentBlockDelta?.delta?.reasoningContent?.text === 'They want weather.')).toBe(true);
    expect(all.at(-2)).toEqual({ messageStop: { stopReason: 'tool_use' } });
    expect(all.at(-1)?.metadata?.usage).toEqual({ inputTokens: 30, outputTokens: 20, cacheReadInputTokens: 100, totalTokens: 150 });
    expect(up.refused).toEqual([]);
  });

  it('an inference profile ARN as model id (":" and "/" in one encoded segment) and a session token both sign correctly', async () => {
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0';
    const withToken = sdk({ credentials: AWS_SESSION_KEYS });
    const answer = await withToken.send(new ConverseCommand({ modelId: arn, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
    withToken.destroy();
    expect(answer.stopReason).toBe('end_turn');
    expect(up.refused).toEqual([]);
    expect(up.converse()[0]?.path).toBe(`/model/${encodeURIComponent(arn)}/converse`);
    expect(up.converse()[0]?.headers['x-amz-security-token']).toBe(AWS_SESSION_KEYS.sessionToken);
  });

  it('a Bedrock API key as Authorization: Bearer is taken; a wrong one is UnrecognizedClientException', async () => {
    const bearer = sdk({ credentials: undefined, token: { token: BEDROCK_API_KEY }, authSchemePreference: ['httpBearerAuth'] });
    const answer = await bearer.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
    expect(answer.stopReason).toBe('end_turn');
    expect(up.converse()[0]?.headers.authorization).toBe(`Bearer ${BEDROCK_API_KEY}`);
    const wrong = sdk({ credentials: undefined, token: { token: 'ABSK-wrong' }, authSchemePreference: ['httpBearerAuth'] });
    await expect(wrong.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }))).rejects.toMatchObject({ name: 'UnrecognizedClientException', $metadata: { httpStatusCode: 403 } });
    bearer.destroy();
    wrong.destroy();
  });

  it('InvokeModel: Titan text embeddings (one text) and Cohere embed (texts, input_type) with the token count header', async () => {
    const titan = await client.send(new InvokeModelCommand({ modelId: 'amazon.titan-embed-text-v2:0', contentType: 'application/json', accept: 'application/json', body: JSON.stringify({ inputText: 'hello world', dimensions: 256 }) }));
    const titanBody = JSON.parse(new TextDecoder().decode(titan.body)) as { embedding: number[]; inputTextTokenCount: number };
    expect(titanBody.embedding).toEqual(vectorOf('hello world', 256));
    expect(titanBody.inputTextTokenCount).toBe(3);
    const cohere = await client.send(new InvokeModelCommand({ modelId: 'cohere.embed-english-v3', contentType: 'application/json', body: JSON.stringify({ texts: ['a', 'b'], input_type: 'search_document' }) }));
    const cohereBody = JSON.parse(new TextDecoder().decode(cohere.body)) as { embeddings: number[][]; response_type: string };
    expect(cohereBody.response_type).toBe('embeddings_floats');
    expect(cohereBody.embeddings).toEqual([vectorOf('a', 1024), vectorOf('b', 1024)]);
    expect(up.refused).toEqual([]);
  });

  it('ListAsyncInvokes (GET /async-invoke, the free probe) is signed with its query and answered', async () => {
    const list = await client.send(new ListAsyncInvokesCommand({ maxResults: 1 }));
    expect(list.asyncInvokeSummaries).toEqual([]);
    expect(up.refused).toEqual([]);
  });

  it('an exception frame mid-stream is thrown by the SDK as that modelled exception', async () => {
    up.script({ kind: 'exception', name: 'throttlingException', message: 'Too many tokens, please wait before trying again.', afterContent: true }, { kind: 'exception', name: 'modelStreamErrorException', message: 'Model stream error', afterContent: false });
    const first = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'x' }] }] }));
    const seen: ConverseStreamOutput[] = [];
    const error = await (async () => {
      for await (const event of first.stream ?? []) seen.push(event);
    })().catch((e: unknown) => e);
    expect(seen.map((e) => Object.keys(e)[0])).toEqual(['messageStart', 'contentBlockDelta']);
    expect(error).toMatchObject({ name: 'ThrottlingException', message: 'Too many tokens, please wait before trying again.' });
    const second = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'x' }] }] }));
    await expect(events(second.stream)).rejects.toMatchObject({ name: 'ModelStreamErrorException' });
  });

  it('errors: a wrong secret is InvalidSignatureException, clock skew "Signature expired", 429 ThrottlingException, a blank text block ValidationException', async () => {
    const body = { modelId: MODEL, messages: [{ role: 'user' as const, content: [{ text: 'x' }] }] };
    const wrongSecret = sdk({ credentials: { accessKeyId: AWS_KEYS.accessKeyId, secretAccessKey: 'not-the-secret' } });
    await expect(wrongSecret.send(new ConverseCommand(body))).rejects.toMatchObject({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 403 } });
    wrongSecret.destroy();
    const unknown = sdk({ credentials: { accessKeyId: 'AKIAUNKNOWNKEY000000', secretAccessKey: 'x' } });
    await expect(unknown.send(new ConverseCommand(body))).rejects.toMatchObject({ name: 'UnrecognizedClientException' });
    unknown.destroy();
    up.skewMs = 20 * 60_000;
    const skewed = await client.send(new ConverseCommand(body)).catch((e: unknown) => e);
    expect(skewed).toMatchObject({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 403 } });
    expect(String((skewed as Error).message)).toMatch(/^Signature expired: \d{8}T\d{6}Z is now earlier than/);
    up.skewMs = 0;
    up.script({ kind: 'error', status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.', headers: { 'retry-after': '3' } });
    await expect(client.send(new ConverseCommand(body))).rejects.toMatchObject({ name: 'ThrottlingException', $metadata: { httpStatusCode: 429 } });
    const blank = await client.send(new ConverseCommand({ ...body, messages: [{ role: 'user', content: [{ text: '  ' }] }] })).catch((e: unknown) => e);
    expect(blank).toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
    expect(String((blank as Error).message)).toContain('is blank');
    expect(up.refused).toHaveLength(3);
  });

  describe('Claude through InvokeModel (Anthropic\'s Messages body as Bedrock takes it)', () => {
    const claude = (body: Record<string, unknown>) => ({ modelId: MODEL, contentType: 'application/json', accept: 'application/json', body: JSON.stringify(body) });
    const messages = [{ role: 'user', content: 'Hi there' }];
    /** The Anthropic events a response stream's chunks carry, as the SDK hands them out. */
    async function chunks(stream: AsyncIterable<ResponseStream> | undefined): Promise<Array<Record<string, unknown>>> {
      const out: Array<Record<string, unknown>> = [];
      for await (const event of stream ?? []) out.push(JSON.parse(new TextDecoder().decode(event.chunk?.bytes)) as Record<string, unknown>);
      return out;
    }

    it('InvokeModel: a signed Messages body with anthropic_version and anthropic_beta; the SDK reads the Message', async () => {
      const answer = await client.send(new InvokeModelCommand(claude({ anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['interleaved-thinking-2025-05-14'], max_tokens: 64, messages })));
      const message = JSON.parse(new TextDecoder().decode(answer.body)) as Record<string, unknown>;
      expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-3-5-sonnet-20240620', content: [{ type: 'text', text: 'Hello! You said: Hi there' }], stop_reason: 'end_turn', usage: { input_tokens: 12, output_tokens: 6 } });
      expect(message.id).toMatch(/^msg_bdrk_/);
      expect(up.refused).toEqual([]);
      const [seen] = up.invocations();
      expect(seen?.path).toBe(`/model/${encodeURIComponent(MODEL)}/invoke`);
      expect(seen?.body.anthropic_beta).toEqual(['interleaved-thinking-2025-05-14']);
    });

    it('InvokeModelWithResponseStream: chunk events whose bytes are the Anthropic events, a tool_use input in fragments, message_stop with the invocation metrics', async () => {
      up.scriptClaude({ kind: 'message', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_bdrk_01', name: 'get_weather', input: { city: 'Paris' } }], usage: { input_tokens: 30, output_tokens: 20 } });
      const answer = await client.send(new InvokeModelWithResponseStreamCommand(claude({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 64, messages })));
      const events = await chunks(answer.body);
      expect(events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'content_block_start', ...Array(4).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop']);
      const json = events.filter((e) => (e.delta as { type?: string } | undefined)?.type === 'input_json_delta').map((e) => (e.delta as { partial_json: string }).partial_json).join('');
      expect(JSON.parse(json)).toEqual({ city: 'Paris' });
      expect(events.at(-2)).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 20 } });
      expect(events.at(-1)).toEqual({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 30, outputTokenCount: 20, invocationLatency: 321, firstByteLatency: 123 } });
      expect(up.invocations()[0]?.path).toBe(`/model/${encodeURIComponent(MODEL)}/invoke-with-response-stream`);
    });

    it('refusals: no anthropic_version, a model or stream field, betas not a list are ValidationException; an exception frame mid-stream is the modelled exception', async () => {
      for (const [body, text] of [
        [{ max_tokens: 8, messages }, 'required key [anthropic_version] not found'],
        [{ anthropic_version: 'bedrock-2023-05-31', model: 'claude', max_tokens: 8, messages }, 'extraneous key [model]'],
        [{ anthropic_version: 'bedrock-2023-05-31', stream: true, max_tokens: 8, messages }, 'extraneous key [stream]'],
        [{ anthropic_version: 'bedrock-2023-05-31', anthropic_beta: 'a,b', max_tokens: 8, messages }, 'anthropic_beta'],
        [{ anthropic_version: 'bedrock-2023-05-31', messages }, 'max_tokens'],
      ] as const) {
        const error = await client.send(new InvokeModelCommand(claude(body))).catch((e: unknown) => e);
        expect(error).toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
        expect(String((error as Error).message)).toContain(text);
      }
      up.scriptClaude({ kind: 'exception', name: 'throttlingException', message: 'Too many tokens, please wait before trying again.', afterContent: true });
      const answer = await client.send(new InvokeModelWithResponseStreamCommand(claude({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 8, messages })));
      const seen: string[] = [];
      const error = await (async () => {
        for await (const event of answer.body ?? []) seen.push(String((JSON.parse(new TextDecoder().decode(event.chunk?.bytes)) as { type: string }).type));
      })().catch((e: unknown) => e);
      expect(seen).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
      expect(error).toMatchObject({ name: 'ThrottlingException', message: 'Too many tokens, please wait before trying again.' });
    });
  });
});
