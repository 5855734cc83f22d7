/**
 * A chat completion → a Responses API `response` object, and the pieces of
 * one that the stream translator (stream.ts) builds too. Pure. The shapes
 * and key order are OpenAI's (openai-python's recorded live answers in
 * tests/lib/responses/test_responses.py; the `openai` SDK's
 * resources/responses types): `output` holds a `message` item with
 * `output_text` (and `refusal`) parts, then one `function_call` item per
 * tool call; `usage` counts `input_tokens` / `output_tokens`.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../../../protocol/errors.js';

export type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Makes the ids of a response and its items; tests give a counter, the gateway `uniqueIds`. */
export type IdSource = (prefix: 'resp' | 'msg' | 'fc') => string;

/**
 * Ids unique in this thread by a counter, and across threads, pods and
 * restarts by a random part drawn once: nothing is stored, so an id only
 * has to differ from every other (a random UUID each cost 1.2 µs).
 */
const THREAD_PART = randomBytes(8).toString('hex');
let counter = 0;
export const uniqueIds: IdSource = (prefix) => `${prefix}_${THREAD_PART}${(++counter).toString(16).padStart(10, '0')}`;

/**
 * The fields of a response object that repeat the request (what was asked,
 * or the API's default), as JSON text made once per request: a response
 * object is serialised once, or three times per stream, and most of its
 * text is these.
 */
export interface Echo {
  /** `,"instructions":…,"max_output_tokens":…,"max_tool_calls":null` */
  readonly afterIncomplete: string;
  /** `,"parallel_tool_calls":…` to `"safety_identifier":…` */
  readonly afterOutput: string;
  /** The request's, when the upstream names none. */
  readonly serviceTier: string;
  /** `,"store":false` to `"truncation":…` */
  readonly afterServiceTier: string;
  /** `,"user":…,"metadata":…}` */
  readonly afterUsage: string;
}

const j = (value: unknown): string => JSON.stringify(value);

/** The request keys the echo repeats: a request with none of them (most) shares one echo. */
const ECHOED = ['instructions', 'max_output_tokens', 'parallel_tool_calls', 'prompt_cache_key', 'reasoning', 'safety_identifier', 'service_tier', 'temperature', 'text', 'tool_choice', 'tools', 'top_logprobs', 'top_p', 'truncation', 'user', 'metadata'];
let plainEcho: Echo | null = null;

export function echoOf(request: Json): Echo {
  for (const key of ECHOED) if (request[key] !== undefined) return makeEcho(request);
  return (plainEcho ??= makeEcho({}));
}

function makeEcho(request: Json): Echo {
  const { format, ...textRest } = isRecord(request.text) ? request.text : {};
  const reasoning = isRecord(request.reasoning) ? request.reasoning : {};
  const tools = Array.isArray(request.tools) ? request.tools.map(echoTool) : [];
  return {
    afterIncomplete: `,"instructions":${j(request.instructions ?? null)},"max_output_tokens":${j(request.max_output_tokens ?? null)},"max_tool_calls":null`,
    afterOutput:
      `,"parallel_tool_calls":${j(request.parallel_tool_calls ?? true)},"previous_response_id":null,"prompt_cache_key":${j(request.prompt_cache_key ?? null)}` +
      `,"reasoning":${j({ effort: reasoning.effort ?? null, summary: reasoning.summary ?? null })},"safety_identifier":${j(request.safety_identifier ?? null)}`,
    serviceTier: j(request.service_tier ?? null),
    // CONTRACT.md: stateless, whatever the request said.
    afterServiceTier:
      `,"store":false,"temperature":${j(request.temperature ?? null)},"text":${j({ format: format ?? { type: 'text' }, ...textRest })}` +
      `,"tool_choice":${j(request.tool_choice ?? 'auto')},"tools":${j(tools)},"top_logprobs":${j(request.top_logprobs ?? 0)},"top_p":${j(request.top_p ?? null)}` +
      `,"truncation":${j(request.truncation ?? 'disabled')}`,
    afterUsage: `,"user":${j(request.user ?? null)},"metadata":${j(request.metadata ?? {})}}`,
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

const orNull = (value: unknown): string => (value === null ? 'null' : j(value));

/** A `response` object as JSON text, its keys in the order OpenAI writes them. */
export function responseJson(echo: Echo, a: Answer): string {
  return (
    `{"id":${j(a.id)},"object":"response","created_at":${a.createdAt},"status":"${a.status}","background":false,"error":${orNull(a.error)},"incomplete_details":${orNull(a.incompleteDetails)}` +
    `${echo.afterIncomplete},"model":${j(a.model)},"output":${j(a.output)}${echo.afterOutput}` +
    `,"service_tier":${a.serviceTier === undefined || a.serviceTier === null ? echo.serviceTier : j(a.serviceTier)}${echo.afterServiceTier},"usage":${orNull(a.usage)}${echo.afterUsage}`
  );
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

/** A whole chat completion (already checked to have `choices`) → a `response` object as JSON text; its first choice only (Responses has no `n`). */
export function toResponse(chat: Json, echo: Echo, ids: IdSource): string {
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
  return responseJson(echo, {
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
