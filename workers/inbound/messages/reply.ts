/**
 * A chat completion → an Anthropic Message (CONTRACT.md, Anthropic Messages
 * API (inbound), Reply), and the pieces of one the stream translator
 * (stream.ts) writes too: the stop reason and the usage. Pure. The key
 * order is the live API's (anthropic-sdk-typescript's recorded fixtures,
 * tests/lib/fixtures/*.txt): `id, type, role, model, content, stop_reason,
 * stop_sequence, usage`. Where the contract is silent (docs/PROVIDERS.md,
 * "Anthropic Messages inbound: mapping"):
 *
 * - the first choice only (Anthropic has no `n`);
 * - content in order: a `thinking` block (the reasoning text, when the
 *   request enabled thinking; `signature` empty: the gateway has none to
 *   give, and drops thinking blocks that come back), a `text` block (none
 *   for an empty text: Anthropic refuses an empty text block when the
 *   client sends the turn back), OpenAI's `refusal` as a `text` block, then
 *   one `tool_use` block per tool call;
 * - a tool call's `arguments` that are not a JSON object (not JSON, or
 *   another JSON value) give `input: {}`: Anthropic's input is always an
 *   object, and the client's tool then reports the missing parameters as a
 *   tool error the model can correct on its next turn; `""` is no
 *   arguments, `{}` too;
 * - `stop_reason` by the table below; `stop` becomes `stop_sequence` only
 *   when the upstream names the sequence (vLLM's `choice.stop_reason`, a
 *   string), since no other chat upstream says which one stopped it;
 *   `stop` with tool calls is `tool_use`, and a refusal `refusal`;
 * - `usage` zeros when the upstream sent none.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { messageIdOf, toAnthropicToolId, type IdSource } from './ids.js';

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

/** Anthropic's `usage`, in the live API's key order. */
export interface MessageUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Json[];
  stop_reason: StopReason;
  stop_sequence: string | null;
  usage: MessageUsage;
}

export interface ReplyOptions {
  /** The request enabled thinking (request.ts, ChatTranslation.thinking?.enabled): reasoning text is a `thinking` block. */
  readonly thinking: boolean;
  /** Names the message when the completion names no model (the upstream id the attempt asked for). */
  readonly model: string;
  readonly ids: IdSource;
}

/** chat `finish_reason` → `stop_reason` (CONTRACT.md); anything else, and none, is `end_turn`. */
const STOP: Readonly<Record<string, StopReason>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

/**
 * The stop reason and sequence of an answer: `finishReason` mapped, `stop` refined by what the answer
 * carried (tool calls, a refusal) and by the sequence the upstream named (`stopSequence`, or null).
 *
 * @example
 *   stopOf('stop', null, true, false) // → { stop_reason: 'tool_use', stop_sequence: null }
 */
export function stopOf(finishReason: unknown, stopSequence: unknown, toolCalls: boolean, refused: boolean): { stop_reason: StopReason; stop_sequence: string | null } {
  const mapped = (typeof finishReason === 'string' ? STOP[finishReason] : undefined) ?? 'end_turn';
  if (mapped !== 'end_turn') return { stop_reason: mapped, stop_sequence: null };
  if (refused) return { stop_reason: 'refusal', stop_sequence: null };
  if (toolCalls) return { stop_reason: 'tool_use', stop_sequence: null };
  if (finishReason === 'stop' && typeof stopSequence === 'string' && stopSequence.length > 0) return { stop_reason: 'stop_sequence', stop_sequence: stopSequence };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * chat `usage` → Anthropic's: `input_tokens` the prompt tokens not read from a cache (chat's
 * `prompt_tokens` counts them all, CONTRACT.md, Native providers), the cached ones as
 * `cache_read_input_tokens`; chat says nothing of cache writes (0).
 */
export function usageOf(usage: unknown): MessageUsage {
  if (!isRecord(usage)) return { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
  const details = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const prompt = count(usage.prompt_tokens);
  const cached = Math.min(count(details.cached_tokens), prompt);
  return { input_tokens: prompt - cached, cache_creation_input_tokens: 0, cache_read_input_tokens: cached, output_tokens: count(usage.completion_tokens) };
}

/** The reasoning text a chat message or delta carries: `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, newer vLLM). */
export function reasoningOf(message: Json): string | null {
  const text = typeof message.reasoning_content === 'string' ? message.reasoning_content : typeof message.reasoning === 'string' ? message.reasoning : null;
  return text !== null && text.length > 0 ? text : null;
}

/** A tool call's JSON `arguments` as Anthropic's `input`: an object, `{}` for anything else. */
export function inputOf(args: unknown): Json {
  if (typeof args !== 'string' || args.length === 0) return {};
  try {
    const parsed = JSON.parse(args) as unknown;
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** A whole chat completion → an Anthropic Message (its first choice). */
export function toMessage(completion: Json, options: ReplyOptions): AnthropicMessage {
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  if (!isRecord(choice) || !isRecord(choice.message)) throw new GatewayError('upstream_invalid_response', 'the provider response has no choice with a message');
  const message = choice.message;
  const content: Json[] = [];
  const reasoning = options.thinking ? reasoningOf(message) : null;
  if (reasoning !== null) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const text = textOf(message.content);
  if (text.length > 0) content.push({ type: 'text', text });
  const refused = typeof message.refusal === 'string' && message.refusal.length > 0;
  if (refused) content.push({ type: 'text', text: message.refusal });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
  for (const call of calls) {
    const fn = isRecord(call.function) ? call.function : {};
    const id = typeof call.id === 'string' && call.id.length > 0 ? toAnthropicToolId(call.id) : options.ids('toolu');
    content.push({ type: 'tool_use', id, name: typeof fn.name === 'string' ? fn.name : '', input: inputOf(fn.arguments) });
  }
  return {
    id: messageIdOf(completion.id, options.ids),
    type: 'message',
    role: 'assistant',
    model: typeof completion.model === 'string' && completion.model.length > 0 ? completion.model : options.model,
    content,
    ...stopOf(choice.finish_reason, choice.stop_reason, calls.length > 0, refused),
    usage: usageOf(completion.usage),
  };
}

/** A chat message's content: a string, or text parts (some upstreams answer with parts) joined. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}
