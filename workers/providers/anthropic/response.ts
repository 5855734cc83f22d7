/**
 * An Anthropic Messages answer as a `chat.completion` (pure; examples in
 * anthropic/golden/). CONTRACT.md, Native providers:
 * - text blocks joined as `message.content` (null when the answer is only
 *   tool calls); `tool_use` blocks as `message.tool_calls` with the input
 *   as a JSON string; thinking and server-tool blocks are not carried;
 * - `stop_reason`: `end_turn`, `stop_sequence`, `pause_turn` → `stop`;
 *   `max_tokens`, `model_context_window_exceeded` → `length`; `tool_use` →
 *   `tool_calls`; `refusal` → `content_filter`;
 * - usage: `prompt_tokens` counts every input token, cache reads and cache
 *   writes included (as OpenAI counts), cache reads also as
 *   `prompt_tokens_details.cached_tokens`;
 * - the message's own `id` and `model`; `created` is the gateway's clock
 *   (Anthropic sends none);
 * - JSON mode (request.ts): the forced tool's input is the content.
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { isRecord } from '../compatible.js';
import { JSON_TOOL } from './request.js';

export interface ResponseOptions {
  /** Seconds since the epoch, for `created`. */
  readonly created: number;
  /** The request forced the JSON tool (request.ts). */
  readonly jsonMode: boolean;
}

const FINISH: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** OpenAI's finish_reason for Anthropic's stop_reason (JSON mode's forced tool is an answer, so `stop`). */
export function finishReason(stopReason: unknown, jsonMode: boolean): string {
  if (jsonMode && stopReason === 'tool_use') return 'stop';
  return (typeof stopReason === 'string' ? FINISH[stopReason] : undefined) ?? 'stop';
}

/** Anthropic's usage counters (message_start and message_delta carry them; later ones replace earlier ones). */
export interface AnthropicUsage {
  input: number;
  cacheRead: number | null;
  cacheCreation: number;
  output: number;
}

export const emptyUsage = (): AnthropicUsage => ({ input: 0, cacheRead: null, cacheCreation: 0, output: 0 });

/** Reads the counters an Anthropic usage object has into `into`. */
export function readUsage(usage: unknown, into: AnthropicUsage): void {
  if (!isRecord(usage)) return;
  const n = (key: string) => (typeof usage[key] === 'number' ? (usage[key] as number) : null);
  into.input = n('input_tokens') ?? into.input;
  into.cacheRead = n('cache_read_input_tokens') ?? into.cacheRead;
  into.cacheCreation = n('cache_creation_input_tokens') ?? into.cacheCreation;
  into.output = n('output_tokens') ?? into.output;
}

/** The compatible usage object, and the gateway's own count. */
export function compatibleUsage(u: AnthropicUsage): { json: Record<string, unknown>; usage: Usage } {
  const prompt = u.input + (u.cacheRead ?? 0) + u.cacheCreation;
  const json: Record<string, unknown> = { prompt_tokens: prompt, completion_tokens: u.output, total_tokens: prompt + u.output };
  if (u.cacheRead !== null) json.prompt_tokens_details = { cached_tokens: u.cacheRead };
  return { json, usage: { prompt, completion: u.output } };
}

export function toChatCompletion(message: unknown, options: ResponseOptions): { completion: Record<string, unknown>; usage: Usage } {
  if (!isRecord(message) || !Array.isArray(message.content)) throw new GatewayError('upstream_invalid_response', 'the provider answer is not an Anthropic message');
  let text: string | null = null;
  const toolCalls: Record<string, unknown>[] = [];
  for (const block of message.content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text = (text ?? '') + block.text;
    else if (block.type === 'tool_use' && options.jsonMode && block.name === JSON_TOOL) text = (text ?? '') + JSON.stringify(block.input ?? {});
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const reply: Record<string, unknown> = { role: 'assistant', content: text ?? (toolCalls.length > 0 ? null : ''), refusal: null };
  if (toolCalls.length > 0) reply.tool_calls = toolCalls;
  const counters = emptyUsage();
  readUsage(message.usage, counters);
  const { json, usage } = compatibleUsage(counters);
  const completion = {
    id: message.id,
    object: 'chat.completion',
    created: options.created,
    model: message.model,
    choices: [{ index: 0, message: reply, logprobs: null, finish_reason: finishReason(message.stop_reason, options.jsonMode) }],
    usage: json,
  };
  return { completion, usage };
}
