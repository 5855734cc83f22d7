/**
 * A Gemini `GenerateContentResponse` as a `chat.completion` (pure; examples
 * in gemini/golden/). CONTRACT.md, Native providers; where it is silent,
 * Gemini's API reference (`GenerateContentResponse`, `Candidate`,
 * `FinishReason`, `UsageMetadata`):
 * - one choice per candidate (its `index`); its text parts joined as
 *   `message.content` (null when the answer is only function calls);
 *   thought parts (`thought: true`) as `message.reasoning_content`
 *   (DeepSeek's and vLLM's field) when the request asked for them
 *   (`options.thoughts`: a Messages call with thinking), otherwise not
 *   carried; `functionCall` parts
 *   as `message.tool_calls`, arguments as a JSON string, the id Gemini gave
 *   or one of the gateway's, with the part's thought signature inside
 *   (tool-call-id.ts);
 * - `finishReason` → `finish_reason` (FINISH below); `tool_calls` whenever
 *   the candidate called a function and stopped normally; a prompt Gemini
 *   blocked (`promptFeedback.blockReason`, no candidate) is one empty
 *   choice with `content_filter`;
 * - usage: `prompt_tokens` = `promptTokenCount` (cached tokens already
 *   in it) + `toolUsePromptTokenCount`; `completion_tokens` =
 *   `candidatesTokenCount` + `thoughtsTokenCount` (OpenAI counts reasoning
 *   tokens as completion tokens, and so bills them), the thoughts also as
 *   `completion_tokens_details.reasoning_tokens`;
 *   `cachedContentTokenCount` → `prompt_tokens_details.cached_tokens`;
 * - `id` = Gemini's `responseId`, `model` = its `modelVersion`; `created`
 *   is the gateway's clock (Gemini sends none).
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { isRecord } from '../compatible.js';
import { toolCallId } from './tool-call-id.js';

export interface ResponseOptions {
  /** Seconds since the epoch, for `created`. */
  readonly created: number;
  /** The upstream model id, for an answer without `modelVersion`. */
  readonly model: string;
  /** Random per answer: the ids made for function calls Gemini gave none (`call_<seed>_<n>`) and an answer without `responseId`. */
  readonly idSeed: string;
  /**
   * Thought parts are carried as `reasoning_content`: the request asked for them (a Messages call's
   * thinking, ProviderCall.thinking shown). Otherwise they are left out, as for every chat caller.
   */
  readonly thoughts?: boolean;
}

const FINISH: Readonly<Record<string, string>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  // Stopped at the per-request token limit, to be continued.
  CONTINUATION: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
  IMAGE_PROHIBITED_CONTENT: 'content_filter',
  IMAGE_RECITATION: 'content_filter',
  // A function call Gemini could not form or run: no call is in the answer, so not `tool_calls`.
  MALFORMED_FUNCTION_CALL: 'stop',
  UNEXPECTED_TOOL_CALL: 'stop',
  TOO_MANY_TOOL_CALLS: 'stop',
  LANGUAGE: 'stop',
  OTHER: 'stop',
};

/** OpenAI's finish_reason for a candidate's finishReason (unknown and future reasons: `stop`). */
export function finishReason(reason: unknown, calledFunctions: boolean): string {
  const mapped = (typeof reason === 'string' ? FINISH[reason] : undefined) ?? 'stop';
  return mapped === 'stop' && calledFunctions && reason === 'STOP' ? 'tool_calls' : mapped;
}

/** The compatible usage object of a `usageMetadata`, and the gateway's own count. */
export function compatibleUsage(metadata: unknown): { json: Record<string, unknown>; usage: Usage } {
  const m = isRecord(metadata) ? metadata : {};
  const n = (key: string): number | null => (typeof m[key] === 'number' ? (m[key] as number) : null);
  const thoughts = n('thoughtsTokenCount');
  const cached = n('cachedContentTokenCount');
  const prompt = (n('promptTokenCount') ?? 0) + (n('toolUsePromptTokenCount') ?? 0);
  const completion = (n('candidatesTokenCount') ?? 0) + (thoughts ?? 0);
  const json: Record<string, unknown> = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cached !== null) json.prompt_tokens_details = { cached_tokens: cached };
  if (thoughts !== null) json.completion_tokens_details = { reasoning_tokens: thoughts };
  return { json, usage: { prompt, completion } };
}

/** What one candidate's parts say: its text (null: none), its function calls as compatible tool calls. */
export interface CandidateParts {
  text: string | null;
  /** The thought parts' text (null: none). */
  reasoning: string | null;
  readonly toolCalls: Array<Record<string, unknown>>;
}

/**
 * Reads a candidate's parts into `into`: text joined, thoughts' text joined when `thoughts`, each function call as a
 * compatible tool call whose id is Gemini's or `call_<seed>_<n>` (`next` numbers them across the answer).
 */
export function readParts(content: unknown, seed: string, next: () => number, into: CandidateParts, thoughts = false): void {
  const parts = isRecord(content) && Array.isArray(content.parts) ? content.parts : [];
  for (const part of parts) {
    if (!isRecord(part)) continue;
    if (part.thought === true) {
      if (thoughts && typeof part.text === 'string' && part.text.length > 0) into.reasoning = (into.reasoning ?? '') + part.text;
    } else if (typeof part.text === 'string' && part.text.length > 0) into.text = (into.text ?? '') + part.text;
    else if (isRecord(part.functionCall) && typeof part.functionCall.name === 'string') {
      const call = part.functionCall;
      const base = typeof call.id === 'string' && call.id.length > 0 ? call.id : `call_${seed}_${next()}`;
      into.toolCalls.push({ id: toolCallId(base, part.thoughtSignature), type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } });
    }
  }
}

/** A counter from 0. */
export const counter = (): (() => number) => {
  let n = 0;
  return () => n++;
};

/** Why Gemini refused the prompt, when it answered with no candidate. */
export const blockReasonOf = (response: Record<string, unknown>): unknown => (isRecord(response.promptFeedback) ? response.promptFeedback.blockReason : undefined);

export function toChatCompletion(response: unknown, options: ResponseOptions): { completion: Record<string, unknown>; usage: Usage } {
  if (!isRecord(response)) throw new GatewayError('upstream_invalid_response', 'the provider answer is not a Gemini GenerateContentResponse');
  const candidates = Array.isArray(response.candidates) ? response.candidates : [];
  const blocked = blockReasonOf(response);
  if (candidates.length === 0 && blocked === undefined) throw new GatewayError('upstream_invalid_response', 'the provider answer has no candidates and no prompt feedback');
  const next = counter();
  const choices = candidates.map((candidate, i) => {
    const c = isRecord(candidate) ? candidate : {};
    const read: CandidateParts = { text: null, reasoning: null, toolCalls: [] };
    readParts(c.content, options.idSeed, next, read, options.thoughts);
    const message: Record<string, unknown> = { role: 'assistant', content: read.text ?? (read.toolCalls.length > 0 ? null : ''), refusal: null };
    if (read.reasoning !== null) message.reasoning_content = read.reasoning;
    if (read.toolCalls.length > 0) message.tool_calls = read.toolCalls;
    const index = typeof c.index === 'number' ? c.index : i;
    return { index, message, logprobs: null, finish_reason: finishReason(c.finishReason, read.toolCalls.length > 0) };
  });
  if (choices.length === 0) choices.push({ index: 0, message: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: 'content_filter' });
  const { json, usage } = compatibleUsage(response.usageMetadata);
  const completion = {
    id: typeof response.responseId === 'string' ? response.responseId : `chatcmpl-${options.idSeed}`,
    object: 'chat.completion',
    created: options.created,
    model: typeof response.modelVersion === 'string' ? response.modelVersion : options.model,
    choices,
    usage: json,
  };
  return { completion, usage };
}
