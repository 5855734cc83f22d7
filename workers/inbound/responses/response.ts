/**
 * A chat completion → a Responses API `response` object, and the pieces of
 * one that the stream translator (stream.ts) builds too. Pure. The shapes
 * and key order are OpenAI's (openai-python's recorded live answers in
 * tests/lib/responses/test_responses.py; the `openai` SDK's
 * resources/responses types): `output` holds a `message` item with
 * `output_text` (and `refusal`) parts, then one `function_call` item per
 * tool call; `usage` counts `input_tokens` / `output_tokens`.
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../../protocol/errors.js';

export type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Makes the ids of a response and its items; tests give a counter, the gateway random ones. */
export type IdSource = (prefix: 'resp' | 'msg' | 'fc') => string;

export const randomIds: IdSource = (prefix) => `${prefix}_${randomUUID().replaceAll('-', '')}`;

/**
 * The fields of a response object that repeat the request, worked out once
 * per request: what was asked, or the API's default for what was not.
 */
export interface Echo {
  readonly instructions: unknown;
  readonly max_output_tokens: unknown;
  readonly parallel_tool_calls: unknown;
  readonly prompt_cache_key: unknown;
  readonly reasoning: Json;
  readonly safety_identifier: unknown;
  readonly service_tier: unknown;
  readonly temperature: unknown;
  readonly text: Json;
  readonly tool_choice: unknown;
  readonly tools: unknown[];
  readonly top_logprobs: unknown;
  readonly top_p: unknown;
  readonly truncation: unknown;
  readonly user: unknown;
  readonly metadata: unknown;
}

export function echoOf(request: Json): Echo {
  const { format, ...textRest } = isRecord(request.text) ? request.text : {};
  const reasoning = isRecord(request.reasoning) ? request.reasoning : {};
  return {
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    prompt_cache_key: request.prompt_cache_key ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: request.safety_identifier ?? null,
    service_tier: request.service_tier ?? null,
    temperature: request.temperature ?? null,
    text: { format: format ?? { type: 'text' }, ...textRest },
    tool_choice: request.tool_choice ?? 'auto',
    tools: Array.isArray(request.tools) ? request.tools.map(echoTool) : [],
    top_logprobs: request.top_logprobs ?? 0,
    top_p: request.top_p ?? null,
    truncation: request.truncation ?? 'disabled',
    user: request.user ?? null,
    metadata: request.metadata ?? {},
  };
}

function echoTool(tool: unknown): unknown {
  if (!isRecord(tool) || tool.type !== 'function') return tool;
  return { type: 'function', description: tool.description ?? null, name: tool.name, parameters: tool.parameters ?? null, strict: tool.strict ?? null };
}

/** What a response object says beyond the echo. */
export interface Answer {
  readonly id: string;
  readonly createdAt: number;
  readonly status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  readonly error: { code: string; message: string } | null;
  readonly incompleteDetails: { reason: string } | null;
  readonly model: string;
  readonly output: readonly Json[];
  readonly usage: Json | null;
  /** The upstream's, when it named one. */
  readonly serviceTier: unknown;
}

/** A `response` object, its keys in the order OpenAI writes them. */
export function responseObject(echo: Echo, a: Answer): Json {
  return {
    id: a.id,
    object: 'response',
    created_at: a.createdAt,
    status: a.status,
    background: false,
    error: a.error,
    incomplete_details: a.incompleteDetails,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    max_tool_calls: null,
    model: a.model,
    output: a.output,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: null,
    prompt_cache_key: echo.prompt_cache_key,
    reasoning: echo.reasoning,
    safety_identifier: echo.safety_identifier,
    service_tier: a.serviceTier ?? echo.service_tier,
    // CONTRACT.md: stateless, whatever the request said.
    store: false,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_logprobs: echo.top_logprobs,
    top_p: echo.top_p,
    truncation: echo.truncation,
    usage: a.usage,
    user: echo.user,
    metadata: echo.metadata,
  };
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export const messageItem = (id: string, status: ItemStatus, content: Json[]): Json => ({ id, type: 'message', status, content, role: 'assistant' });
export const textPart = (text: string): Json => ({ type: 'output_text', annotations: [], logprobs: [], text });
export const refusalPart = (refusal: string): Json => ({ type: 'refusal', refusal });
export const functionCallItem = (id: string, status: ItemStatus, args: string, callId: string, name: string): Json => ({
  id,
  type: 'function_call',
  status,
  arguments: args,
  call_id: callId,
  name,
});

/** A chat finish reason → the response's status: a cut-off answer is `incomplete`, saying why. */
export function outcomeOf(finishReason: unknown): { status: 'completed' | 'incomplete'; incompleteDetails: { reason: string } | null } {
  if (finishReason === 'length') return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } };
  return { status: 'completed', incompleteDetails: null };
}

/** Chat `usage` → Responses `usage` (null when the upstream sent none). */
export function toUsage(usage: unknown): Json | null {
  if (!isRecord(usage)) return null;
  const input = count(usage.prompt_tokens);
  const output = count(usage.completion_tokens);
  const promptDetails = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completionDetails = isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(promptDetails.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(completionDetails.reasoning_tokens) },
    total_tokens: usage.total_tokens === undefined ? input + output : count(usage.total_tokens),
  };
}

/** A whole chat completion (already checked to have `choices`) → a `response` object; its first choice only (Responses has no `n`). */
export function toResponse(chat: Json, echo: Echo, ids: IdSource): Json {
  const choice = Array.isArray(chat.choices) ? chat.choices[0] : undefined;
  if (!isRecord(choice) || !isRecord(choice.message)) throw new GatewayError('upstream_invalid_response', 'the provider response has no choice with a message');
  const message = choice.message;
  const id = ids('resp');
  const { status, incompleteDetails } = outcomeOf(choice.finish_reason);
  const itemStatus: ItemStatus = status;
  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
  const content: Json[] = [];
  if (typeof message.content === 'string' && (message.content.length > 0 || toolCalls.length === 0)) content.push(textPart(message.content));
  if (typeof message.refusal === 'string') content.push(refusalPart(message.refusal));
  if (content.length === 0 && toolCalls.length === 0) content.push(textPart(''));
  const output: Json[] = [];
  if (content.length > 0) output.push(messageItem(ids('msg'), itemStatus, content));
  for (const call of toolCalls) {
    const fn = isRecord(call.function) ? call.function : {};
    output.push(functionCallItem(ids('fc'), itemStatus, typeof fn.arguments === 'string' ? fn.arguments : '', String(call.id ?? ''), String(fn.name ?? '')));
  }
  return responseObject(echo, {
    id,
    createdAt: typeof chat.created === 'number' ? chat.created : Math.floor(Date.now() / 1000),
    status,
    error: null,
    incompleteDetails,
    model: String(chat.model ?? ''),
    output,
    usage: toUsage(chat.usage),
    serviceTier: chat.service_tier,
  });
}
