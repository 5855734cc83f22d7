/**
 * A fake Gemini API on 127.0.0.1, in the real wire format (Gemini's API
 * reference: models.generateContent, models.streamGenerateContent,
 * models.batchEmbedContents, models.list, the google.rpc error model; the
 * recordings and unit tests of googleapis/js-genai), proved by the official
 * SDK in gemini-upstream.test.ts:
 * - `POST /v1beta/models/<model>:generateContent`,
 *   `:streamGenerateContent?alt=sse` (`data: <response>` events, CRLF line
 *   ends, the finish reason and usage in the last), `:batchEmbedContents`;
 *   the key in `x-goog-api-key` (a wrong one: 400 `API_KEY_INVALID`, none:
 *   403 `PERMISSION_DENIED`, as the service answers);
 * - the request checked as Gemini does (known fields, roles `user` and
 *   `model`, no empty part or text, function responses answering the
 *   function calls of the turn before, declared names, JSON output
 *   settings); on a `gemini-3` model, the thought signature it issued must
 *   come back on the first function call of each model turn;
 * - `generationConfig.thinkingConfig` checked as the thinking guide has it:
 *   a budget or a level, not both; the budget within the model's range
 *   (2.5 Flash 0–24576, Flash-Lite 0 or 512–24576, Pro 128–32768, -1 for
 *   dynamic everywhere), a level only on Gemini 3;
 * - errors as `{"error":{"code","message","status","details"}}`, a 429 with
 *   its `RetryInfo`; a failure mid-stream as the service writes one: the
 *   JSON error body straight after the events, outside the SSE framing;
 * - `GET /v1beta/models` (`pageSize`): the model list (the free probe).
 */
import type { ServerResponse } from 'node:http';
import { sendJson, startFakeServer, writePieces, type FakeRequest, type FakeServer } from './http-fake.js';

export type GeminiPart =
  | { readonly text: string; readonly thought?: boolean; readonly thoughtSignature?: string }
  | { readonly functionCall: { readonly name: string; readonly args: Record<string, unknown>; readonly id?: string }; readonly thoughtSignature?: string };

export interface GeminiCandidate {
  readonly parts: readonly GeminiPart[];
  /** Default: STOP. */
  readonly finishReason?: string;
}

export interface GeminiUsage {
  readonly promptTokenCount: number;
  readonly candidatesTokenCount?: number;
  readonly cachedContentTokenCount?: number;
  readonly thoughtsTokenCount?: number;
}

export interface GeminiError {
  readonly code: number;
  readonly status: string;
  readonly message: string;
  readonly details?: readonly Record<string, unknown>[];
}

/** What the fake does with one generateContent call. */
export type GeminiReply =
  /** An answer (JSON, or its event stream when the request streams); `intervalMs` between stream events (0: one write). */
  | { readonly kind: 'content'; readonly candidates?: readonly GeminiCandidate[]; readonly usage?: GeminiUsage; readonly blockReason?: string; readonly intervalMs?: number }
  /** An error answer with this status and body, and extra headers. */
  | { readonly kind: 'error'; readonly error: GeminiError; readonly headers?: Record<string, string> }
  /** A stream that fails: its error body written (after a text event when `afterContent`) outside the SSE framing, as the service does. */
  | { readonly kind: 'stream-error'; readonly error: GeminiError; readonly afterContent: boolean }
  /** A stream that ends cleanly but before its finish reason (after a text event). */
  | { readonly kind: 'cut-short' }
  /** Streams: one text event, then nothing until the client leaves. */
  | { readonly kind: 'hang' };

export interface GeminiUpstream extends FakeServer {
  /** The `api_base` for a deployment (the origin: the adapter adds /v1beta/…). */
  readonly url: string;
  /** Queues replies for the next generateContent calls (streamed or not), one each. */
  script(...replies: GeminiReply[]): void;
  /** The generateContent and streamGenerateContent calls received. */
  generations(): FakeRequest[];
  /** The batchEmbedContents calls received. */
  embeddings(): FakeRequest[];
  reset(): void;
}

export const GEMINI_KEY = 'AIzaSyFake-gemini-key-0123456789abcdef';
/** The model the fake lists, and a default for tests. */
export const GEMINI_MODEL = 'gemini-2.5-flash';

export const RATE_LIMITED: GeminiError = {
  code: 429,
  status: 'RESOURCE_EXHAUSTED',
  message: 'You exceeded your current quota, please check your plan and billing details.',
  details: [
    { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests', quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier' }] },
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' },
  ],
};

const KEY_INVALID: GeminiError = {
  code: 400,
  status: 'INVALID_ARGUMENT',
  message: 'API key not valid. Please pass a valid API key.',
  details: [
    { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
    { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message: 'API key not valid. Please pass a valid API key.' },
  ],
};

const NO_KEY: GeminiError = {
  code: 403,
  status: 'PERMISSION_DENIED',
  message: 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.',
};

const HEADERS = { vary: 'Origin, X-Origin, Referer', 'server-timing': 'gfet4t7; dur=551', 'x-should-not-pass': 'internal' };
const MODEL_PATH = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|batchEmbedContents)$/;

export async function startGeminiUpstream(key = GEMINI_KEY): Promise<GeminiUpstream> {
  const queue: GeminiReply[] = [];
  /** The thought signatures handed out, each for the function it was given with. */
  const signatures = new Map<string, string>();
  let served = 0;
  const server = await startFakeServer((req, res, { later, alive }) => {
    const n = ++served;
    const sent = req.headers['x-goog-api-key'];
    if (sent === undefined) return geminiError(res, NO_KEY);
    if (sent !== key) return geminiError(res, KEY_INVALID);
    if (req.method === 'GET' && req.path === '/v1beta/models') return sendJson(res, 200, modelList(Number(req.query.get('pageSize') ?? 50)), HEADERS);
    const route = req.method === 'POST' ? MODEL_PATH.exec(req.path) : null;
    if (route === null) return geminiError(res, { code: 404, status: 'NOT_FOUND', message: `Not Found: ${req.method} ${req.path}` });
    const model = decodeURIComponent(route[1] as string);
    const method = route[2] as string;
    if (method === 'batchEmbedContents') {
      const problem = embedProblem(req.body, model);
      if (problem !== null) return geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: problem });
      return sendJson(res, 200, embedAnswer(req.body), HEADERS);
    }
    const stream = method === 'streamGenerateContent';
    if (stream && req.query.get('alt') !== 'sse') return geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: 'this fake streams only with alt=sse' });
    const problem = requestProblem(req.body) ?? thinkingProblem(req.body, model) ?? signatureProblem(req.body, model, signatures);
    if (problem !== null) return geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: problem });
    const reply = queue.shift() ?? defaultReply(req.body);
    if (reply.kind === 'error') return geminiError(res, reply.error, reply.headers);
    const answer = (candidates: readonly GeminiCandidate[], usage?: GeminiUsage, blockReason?: string) => responseOf(n, model, signed(candidates, model, n, signatures), usage, blockReason);
    if (!stream) {
      if (reply.kind !== 'content') throw new Error(`a "${reply.kind}" reply needs a stream request`);
      return sendJson(res, 200, answer(reply.candidates ?? [], reply.usage, reply.blockReason), HEADERS);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-disposition': 'attachment', ...HEADERS });
    const partly = event(responseOf(n, model, [{ parts: [{ text: 'Partly' }], finishReason: '' }]));
    switch (reply.kind) {
      case 'content':
        return writePieces(res, streamEvents(answer(reply.candidates ?? [], reply.usage, reply.blockReason)), reply.intervalMs ?? 0, later, alive, () => res.end());
      case 'stream-error': {
        // The service breaks off a stream with its error body after the events, outside the SSE framing (js-genai's api_client_test).
        // 100 ms apart: @google/genai recognises the error body only when it arrives in a read of its own (it parses each
        // read whole); a loaded host whose client reads late would otherwise get both pieces in one read.
        const pieces = [...(reply.afterContent ? [partly] : []), `${JSON.stringify({ error: reply.error }, null, 2)}\n`];
        return writePieces(res, pieces, 100, later, alive, () => res.end());
      }
      case 'cut-short':
        return writePieces(res, [partly], 0, later, alive, () => res.end());
      case 'hang':
        res.write(partly);
        return;
    }
  });
  return {
    ...server,
    url: server.origin,
    script: (...replies) => void queue.push(...replies),
    generations: () => server.received.filter((r) => /:(stream)?[gG]enerateContent$/.test(r.path)),
    embeddings: () => server.received.filter((r) => r.path.endsWith(':batchEmbedContents')),
    reset() {
      queue.length = 0;
      server.received.length = 0;
    },
  };
}

function defaultReply(body: Record<string, unknown>): GeminiReply {
  return { kind: 'content', candidates: [{ parts: [{ text: `Hello! You said: ${lastUserText(body)}` }] }] };
}

function lastUserText(body: Record<string, unknown>): string {
  const contents = body.contents as Array<{ role: string; parts: Array<{ text?: string }> }>;
  const last = [...contents].reverse().find((c) => c.role === 'user' && c.parts.some((p) => typeof p.text === 'string'));
  return last?.parts.flatMap((p) => (typeof p.text === 'string' ? [p.text] : [])).join(' ') ?? '';
}

/** Each function call part of a gemini-3 answer gets a signature the fake will know again (the first of a turn, as Gemini 3 does). */
function signed(candidates: readonly GeminiCandidate[], model: string, n: number, signatures: Map<string, string>): readonly GeminiCandidate[] {
  if (!model.startsWith('gemini-3')) return candidates;
  return candidates.map((c) => {
    let first = true;
    const parts = c.parts.map((part) => {
      if (!('functionCall' in part) || !first || part.thoughtSignature !== undefined) return part;
      first = false;
      const signature = Buffer.from(`fake-thought-${n}-${part.functionCall.name}`).toString('base64');
      signatures.set(signature, part.functionCall.name);
      return { ...part, thoughtSignature: signature };
    });
    return { ...c, parts };
  });
}

function usageOf(usage: GeminiUsage | undefined): Record<string, unknown> {
  const u = { promptTokenCount: 12, candidatesTokenCount: 6, ...usage };
  return { ...u, totalTokenCount: u.promptTokenCount + u.candidatesTokenCount + (u.thoughtsTokenCount ?? 0), promptTokensDetails: [{ modality: 'TEXT', tokenCount: u.promptTokenCount }] };
}

function responseOf(n: number, model: string, candidates: readonly GeminiCandidate[], usage?: GeminiUsage, blockReason?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (blockReason === undefined) {
    out.candidates = candidates.map((c, index) => {
      const candidate: Record<string, unknown> = { content: { parts: c.parts, role: 'model' } };
      // '' is an event before the last: no finish reason yet.
      if (c.finishReason !== '') candidate.finishReason = c.finishReason ?? 'STOP';
      candidate.index = index;
      return candidate;
    });
  } else out.promptFeedback = { blockReason };
  out.usageMetadata = usageOf(usage);
  out.modelVersion = model;
  out.responseId = `resp-fake-${n}`;
  return out;
}

/** The SSE event of one response, CRLF line ends as the service writes them. */
const event = (response: unknown): string => `data: ${JSON.stringify(response)}\r\n\r\n`;

/** A whole answer as its stream: text in word pieces, each function call whole, the finish reasons and usage in the last event. */
function streamEvents(answer: Record<string, unknown>): string[] {
  const { usageMetadata, candidates, ...rest } = answer as { usageMetadata: Record<string, unknown>; candidates?: Array<{ content: { parts: Record<string, unknown>[] }; finishReason: string; index: number }> };
  if (candidates === undefined) return [event(answer)];
  const out: string[] = [];
  const partial = (index: number, parts: unknown[]) => out.push(event({ candidates: [{ content: { parts, role: 'model' }, index }], usageMetadata: { promptTokenCount: usageMetadata.promptTokenCount, totalTokenCount: usageMetadata.promptTokenCount }, ...rest }));
  for (const c of candidates) {
    for (const part of c.content.parts) {
      if (typeof part.text === 'string' && part.thought !== true) for (const piece of part.text.match(/\S+\s*|\s+/g) ?? []) partial(c.index, [{ ...part, text: piece }]);
      else partial(c.index, [part]);
    }
  }
  out.push(event({ candidates: candidates.map((c) => ({ content: { parts: [{ text: '' }], role: 'model' }, finishReason: c.finishReason, index: c.index })), usageMetadata, ...rest }));
  return out;
}

function modelList(pageSize: number): Record<string, unknown> {
  const models = [GEMINI_MODEL, 'gemini-3-pro-preview', 'gemini-embedding-001'].map((id) => ({ name: `models/${id}`, displayName: id, inputTokenLimit: 1048576, outputTokenLimit: 65536, supportedGenerationMethods: ['generateContent', 'countTokens'] }));
  const page = models.slice(0, Math.max(1, pageSize));
  return page.length < models.length ? { models: page, nextPageToken: 'page-2' } : { models: page };
}

function geminiError(res: ServerResponse, error: GeminiError, headers: Record<string, string> = {}): void {
  sendJson(res, error.code, { error }, { ...HEADERS, ...headers });
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A deterministic unit-ish vector of the text. */
function vector(text: string, dims: number): number[] {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return Array.from({ length: dims }, (_, i) => Math.round(Math.sin(h + i) * 1e6) / 1e6);
}

function embedAnswer(body: Record<string, unknown>): Record<string, unknown> {
  const requests = body.requests as Array<{ content: { parts: Array<{ text: string }> }; outputDimensionality?: number }>;
  return { embeddings: requests.map((r) => ({ values: vector(r.content.parts.map((p) => p.text).join(''), r.outputDimensionality ?? 8) })) };
}

function embedProblem(body: Record<string, unknown>, model: string): string | null {
  for (const key of Object.keys(body)) if (key !== 'requests') return `Invalid JSON payload received. Unknown name "${key}": Cannot find field.`;
  if (!Array.isArray(body.requests) || body.requests.length === 0) return '* BatchEmbedContentsRequest.requests: requests is not specified';
  for (const [i, request] of body.requests.entries()) {
    if (!isRecord(request) || request.model !== `models/${model}`) return `* BatchEmbedContentsRequest.requests[${i}].model: Model names should match. Request model name: models/${model}`;
    const parts = isRecord(request.content) ? request.content.parts : undefined;
    if (!Array.isArray(parts) || parts.length === 0 || !parts.every((p) => isRecord(p) && typeof p.text === 'string' && p.text.length > 0)) return `* BatchEmbedContentsRequest.requests[${i}].content.parts: must be non-empty text`;
    if (request.outputDimensionality !== undefined && (typeof request.outputDimensionality !== 'number' || request.outputDimensionality < 1)) return `* requests[${i}].outputDimensionality: must be positive`;
  }
  return null;
}

const REQUEST_FIELDS = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'cachedContent']);
const GENERATION_FIELDS = new Set(['temperature', 'topP', 'topK', 'maxOutputTokens', 'stopSequences', 'candidateCount', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig', 'responseLogprobs', 'logprobs']);
const PART_DATA = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse'];
const NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;

/**
 * What Gemini would refuse in a generateContent request, as its 400 message; null for a request it takes.
 * The rules the translation must respect, from the API reference and the service's messages: exported for the property test.
 */
export function requestProblem(body: Record<string, unknown>): string | null {
  for (const key of Object.keys(body)) if (!REQUEST_FIELDS.has(key)) return `Invalid JSON payload received. Unknown name "${key}": Cannot find field.`;
  if (!Array.isArray(body.contents) || body.contents.length === 0) return '* GenerateContentRequest.contents: contents is not specified';
  if (body.systemInstruction !== undefined) {
    const parts = isRecord(body.systemInstruction) ? body.systemInstruction.parts : undefined;
    if (!Array.isArray(parts) || parts.length === 0 || !parts.every((p) => isRecord(p) && typeof p.text === 'string' && p.text.length > 0)) return '* GenerateContentRequest.system_instruction.parts: must be non-empty text parts';
  }
  const declared = new Set<string>();
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return '* GenerateContentRequest.tools: must be a list';
    for (const tool of body.tools) {
      const declarations = isRecord(tool) ? tool.functionDeclarations : undefined;
      if (!Array.isArray(declarations) || declarations.length === 0) return '* GenerateContentRequest.tools: each tool needs function_declarations';
      for (const d of declarations) {
        if (!isRecord(d) || typeof d.name !== 'string' || !NAME.test(d.name)) return '* GenerateContentRequest.tools[0].function_declarations: Invalid function name.';
        if (d.parameters !== undefined && d.parametersJsonSchema !== undefined) return 'parameters and parameters_json_schema are mutually exclusive';
        for (const key of Object.keys(d)) if (!['name', 'description', 'parameters', 'parametersJsonSchema', 'response', 'responseJsonSchema'].includes(key)) return `Invalid JSON payload received. Unknown name "${key}" at 'tools[0].function_declarations[0]': Cannot find field.`;
        declared.add(d.name);
      }
    }
  }
  if (body.toolConfig !== undefined) {
    const config = isRecord(body.toolConfig) ? body.toolConfig.functionCallingConfig : undefined;
    if (!isRecord(config) || !['AUTO', 'ANY', 'NONE', 'VALIDATED'].includes(String(config.mode))) return '* GenerateContentRequest.tool_config.function_calling_config.mode: invalid mode';
    if (config.allowedFunctionNames !== undefined) {
      if (config.mode !== 'ANY' && config.mode !== 'VALIDATED') return '* allowed_function_names may be set only when the mode is ANY';
      if (!Array.isArray(config.allowedFunctionNames) || !config.allowedFunctionNames.every((name) => declared.has(String(name)))) return '* allowed_function_names: a name is not declared';
    }
    if (declared.size === 0) return '* GenerateContentRequest.tool_config: set without tools';
  }
  const generation = body.generationConfig;
  if (generation !== undefined) {
    if (!isRecord(generation)) return '* GenerateContentRequest.generation_config: must be an object';
    for (const key of Object.keys(generation)) if (!GENERATION_FIELDS.has(key)) return `Invalid JSON payload received. Unknown name "${key}" at 'generation_config': Cannot find field.`;
    if ((generation.responseJsonSchema !== undefined || generation.responseSchema !== undefined) && generation.responseMimeType !== 'application/json') return '* GenerateContentRequest.generation_config.response_mime_type: must be application/json when a response schema is set';
    const t = generation.temperature;
    if (t !== undefined && (typeof t !== 'number' || t < 0 || t > 2)) return '* GenerateContentRequest.generation_config.temperature: must be in [0, 2]';
    const p = generation.topP;
    if (p !== undefined && (typeof p !== 'number' || p < 0 || p > 1)) return '* GenerateContentRequest.generation_config.top_p: must be in [0, 1]';
    const c = generation.candidateCount;
    if (c !== undefined && (typeof c !== 'number' || c < 1 || c > 8)) return '* GenerateContentRequest.generation_config.candidate_count: must be in [1, 8]';
    const stops = generation.stopSequences;
    if (stops !== undefined && (!Array.isArray(stops) || stops.length > 5 || stops.some((s) => typeof s !== 'string' || s === ''))) return '* GenerateContentRequest.generation_config.stop_sequences: at most 5 non-empty strings';
  }
  let pendingCalls = 0;
  let previous: string | null = null;
  for (const [i, content] of (body.contents as unknown[]).entries()) {
    if (!isRecord(content) || (content.role !== 'user' && content.role !== 'model')) return 'Please use a valid role: user, model.';
    if (!Array.isArray(content.parts) || content.parts.length === 0) return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`;
    let calls = 0;
    let responses = 0;
    for (const part of content.parts) {
      if (!isRecord(part)) return `* GenerateContentRequest.contents[${i}].parts: must be objects`;
      const data = PART_DATA.filter((key) => part[key] !== undefined);
      if (data.length !== 1) return `* GenerateContentRequest.contents[${i}].parts: a part must have exactly one of ${PART_DATA.join(', ')}`;
      if (part.text !== undefined && (typeof part.text !== 'string' || part.text.length === 0)) return 'Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.';
      if (isRecord(part.functionCall)) {
        if (content.role !== 'model' || typeof part.functionCall.name !== 'string' || !isRecord(part.functionCall.args ?? {})) return `* GenerateContentRequest.contents[${i}]: function calls belong to model turns, with a name and args`;
        calls++;
      }
      if (part.functionResponse !== undefined) {
        const response = part.functionResponse;
        if (content.role !== 'user' || !isRecord(response) || typeof response.name !== 'string' || !isRecord(response.response)) return `* GenerateContentRequest.contents[${i}]: function responses belong to user turns, with a name and a response object`;
        responses++;
      }
      if (isRecord(part.inlineData) && (typeof part.inlineData.mimeType !== 'string' || typeof part.inlineData.data !== 'string')) return `* GenerateContentRequest.contents[${i}].parts: inline_data needs mime_type and data`;
    }
    if (calls > 0 && previous === 'model') return 'Please ensure that function call turn comes immediately after a user turn or after a function response turn.';
    if (pendingCalls > 0 && responses !== pendingCalls) return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
    if (pendingCalls === 0 && responses > 0) return 'Please ensure that function response turn comes immediately after a function call turn.';
    pendingCalls = calls;
    previous = content.role;
  }
  return null;
}

const THINKING_FIELDS = new Set(['thinkingBudget', 'includeThoughts', 'thinkingLevel']);

/** The thinking budgets a model takes (Gemini's thinking guide), -1 (dynamic) aside. */
function budgetRange(model: string): { min: number; max: number; off: boolean } {
  if (model.startsWith('gemini-2.5-pro')) return { min: 128, max: 32768, off: false };
  if (model.startsWith('gemini-2.5-flash-lite')) return { min: 512, max: 24576, off: true };
  if (model.startsWith('gemini-2.5-flash')) return { min: 1, max: 24576, off: true };
  // Gemini 3 takes a budget for backwards compatibility, and cannot stop thinking.
  return { min: 128, max: 32768, off: false };
}

/** What Gemini refuses in a `thinkingConfig`, as its 400 message; null for one it takes. */
function thinkingProblem(body: Record<string, unknown>, model: string): string | null {
  const generation = body.generationConfig;
  if (!isRecord(generation) || generation.thinkingConfig === undefined) return null;
  const config = generation.thinkingConfig;
  if (!isRecord(config)) return '* GenerateContentRequest.generation_config.thinking_config: must be an object';
  for (const key of Object.keys(config)) if (!THINKING_FIELDS.has(key)) return `Invalid JSON payload received. Unknown name "${key}" at 'generation_config.thinking_config': Cannot find field.`;
  if (config.includeThoughts !== undefined && typeof config.includeThoughts !== 'boolean') return `Invalid value at 'generation_config.thinking_config.include_thoughts' (TYPE_BOOL), ${JSON.stringify(config.includeThoughts)}`;
  if (config.thinkingBudget !== undefined && config.thinkingLevel !== undefined) return 'You can only set one of thinking budget and thinking level.';
  if (config.thinkingLevel !== undefined && !model.startsWith('gemini-3')) return 'Thinking level is not supported for this model.';
  const budget = config.thinkingBudget;
  if (budget === undefined || budget === -1) return null;
  if (typeof budget !== 'number' || !Number.isInteger(budget)) return `Invalid value at 'generation_config.thinking_config.thinking_budget' (TYPE_INT32), ${JSON.stringify(budget)}`;
  const range = budgetRange(model);
  if (budget === 0 && !range.off) return 'Budget 0 is invalid. This model only works in thinking mode.';
  if (budget !== 0 && (budget < range.min || budget > range.max)) return `The thinking budget (${budget}) is invalid.`;
  return null;
}

/** Gemini 3 wants back the signature it gave the first function call of each model turn, unchanged. */
function signatureProblem(body: Record<string, unknown>, model: string, signatures: ReadonlyMap<string, string>): string | null {
  if (!model.startsWith('gemini-3')) return null;
  for (const content of body.contents as Array<{ role: string; parts: Array<Record<string, unknown>> }>) {
    const first = content.parts.find((p) => isRecord(p.functionCall));
    if (content.role !== 'model' || first === undefined) continue;
    const name = (first.functionCall as { name: string }).name;
    const signature = first.thoughtSignature;
    if (typeof signature !== 'string') return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\`, position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
    if (signatures.get(signature) !== name) return 'Unable to submit request because Thought signature is not valid.';
  }
  return null;
}
