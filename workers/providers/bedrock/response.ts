/**
 * A Converse answer as a `chat.completion` (pure; examples in
 * bedrock/golden/). CONTRACT.md, Native providers:
 * - text blocks joined as `message.content` (null when the answer is only
 *   tool calls); `toolUse` blocks as `message.tool_calls` (`toolUseId` as
 *   the id, the input as a JSON string); reasoning blocks are not carried;
 * - `stopReason`: `end_turn`, `stop_sequence` → `stop`; `tool_use` →
 *   `tool_calls` (also any answer with tool calls; `stop` in JSON mode);
 *   `max_tokens`, `model_context_window_exceeded` → `length`;
 *   `guardrail_intervened`, `content_filtered` → `content_filter`;
 *   `malformed_model_output`, `malformed_tool_use` → `stop`;
 * - usage: `prompt_tokens` = `inputTokens` + `cacheReadInputTokens` +
 *   `cacheWriteInputTokens` (every input token, as OpenAI counts), cache
 *   reads also as `prompt_tokens_details.cached_tokens`;
 * - Converse answers with no id, model or time: `id` is made from the
 *   gateway's request id, `model` is the upstream model id, `created` the
 *   gateway's clock (all passed in);
 * - JSON mode (request.ts): the forced tool's input is the content.
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { JSON_TOOL } from '../chat-request.js';
import { isRecord } from '../compatible.js';

export interface ResponseOptions {
  /** The completion's id. */
  readonly id: string;
  /** The upstream model id. */
  readonly model: string;
  /** Seconds since the epoch, for `created`. */
  readonly created: number;
  /** The request forced the JSON tool (request.ts). */
  readonly jsonMode: boolean;
}

const FINISH: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  malformed_model_output: 'stop',
  malformed_tool_use: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

/** OpenAI's finish_reason for Converse's stopReason; an answer with tool calls is `tool_calls` whatever the reason said (JSON mode's forced tool is an answer, so `stop`). */
export function finishReason(stopReason: unknown, toolCalls: boolean, jsonMode: boolean): string {
  if (jsonMode && stopReason === 'tool_use') return 'stop';
  const mapped = (typeof stopReason === 'string' ? FINISH[stopReason] : undefined) ?? 'stop';
  return toolCalls && mapped === 'stop' ? 'tool_calls' : mapped;
}

/** Converse's `usage` (TokenUsage) as the compatible usage object, and the gateway's own count. */
export function compatibleUsage(usage: unknown): { json: Record<string, unknown>; usage: Usage } {
  const u = isRecord(usage) ? usage : {};
  const n = (key: string): number | null => (typeof u[key] === 'number' ? (u[key] as number) : null);
  const cacheRead = n('cacheReadInputTokens');
  const prompt = (n('inputTokens') ?? 0) + (cacheRead ?? 0) + (n('cacheWriteInputTokens') ?? 0);
  const completion = n('outputTokens') ?? 0;
  const json: Record<string, unknown> = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cacheRead !== null) json.prompt_tokens_details = { cached_tokens: cacheRead };
  return { json, usage: { prompt, completion } };
}

export function toChatCompletion(answer: unknown, options: ResponseOptions): { completion: Record<string, unknown>; usage: Usage } {
  const message = isRecord(answer) && isRecord(answer.output) ? answer.output.message : undefined;
  if (!isRecord(answer) || !isRecord(message) || !Array.isArray(message.content)) throw new GatewayError('upstream_invalid_response', 'the provider answer is not a Converse answer');
  let text: string | null = null;
  const toolCalls: Record<string, unknown>[] = [];
  for (const block of message.content) {
    if (!isRecord(block)) continue;
    if (typeof block.text === 'string') text = (text ?? '') + block.text;
    else if (isRecord(block.toolUse)) {
      const use = block.toolUse;
      if (options.jsonMode && use.name === JSON_TOOL) text = (text ?? '') + JSON.stringify(use.input ?? {});
      else toolCalls.push({ id: use.toolUseId, type: 'function', function: { name: use.name, arguments: JSON.stringify(use.input ?? {}) } });
    }
  }
  const reply: Record<string, unknown> = { role: 'assistant', content: text ?? (toolCalls.length > 0 ? null : ''), refusal: null };
  if (toolCalls.length > 0) reply.tool_calls = toolCalls;
  const { json, usage } = compatibleUsage(answer.usage);
  const completion = {
    id: options.id,
    object: 'chat.completion',
    created: options.created,
    model: options.model,
    choices: [{ index: 0, message: reply, logprobs: null, finish_reason: finishReason(answer.stopReason, toolCalls.length > 0, options.jsonMode) }],
    usage: json,
  };
  return { completion, usage };
}
