/**
 * `POST /v1/messages/count_tokens` for every deployment that is not
 * `anthropic` (CONTRACT.md, Anthropic Messages API (inbound), count_tokens):
 * a local estimate, `{"input_tokens": N}`, with a real BPE tokenizer
 * (o200k_base, from `gpt-tokenizer`) over what the model would read:
 *
 * - the system text (a string, or its text blocks);
 * - each message's text: text blocks, a tool use's name and JSON input, a
 *   tool result's text, thinking text; images and documents are not counted
 *   (their cost depends on pixels and pages the gateway does not decode);
 * - each tool definition as the JSON of its name, description and
 *   input_schema (Anthropic's own tools, which have no schema, by name);
 * - MESSAGE_OVERHEAD tokens per message and for the system prompt (the
 *   role markers every chat template adds).
 *
 * It is an estimate, not the target model's own count: o200k is OpenAI's
 * vocabulary, and each provider's tokenizer differs (Claude's counts run
 * higher on code). Each piece is counted on its own, so on plain text the
 * sum is o200k's count of that text plus the overheads.
 *
 * The tokenizer (about 2 MB of ranks) is imported on the first count in a
 * thread, never before (test/module-graph.test.ts), and answers with no
 * upstream request: an adapter like any other to the attempt loop, so
 * routing, metrics and the access log see the call as usual.
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Provider, ProviderCall, AttemptSink } from '../../providers/adapter.js';

type Json = Record<string, unknown>;
type Counter = (text: string) => number;

/** Tokens each message (and the system prompt) adds beyond its text: OpenAI's per-message figure for its chat format. */
export const MESSAGE_OVERHEAD = 3;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
/** Special-token spellings in a prompt (`<|endoftext|>`) are text to count, not an error. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

let counter: Promise<Counter> | null = null;

/** The o200k counter, imported once per thread on its first use. */
function loadCounter(): Promise<Counter> {
  counter ??= import('gpt-tokenizer/encoding/o200k_base').then(
    (module) => (text: string) => (text.length === 0 ? 0 : module.countTokens(text, AS_TEXT)),
    (err: unknown) => {
      counter = null;
      throw new GatewayError('internal_error', `the tokenizer could not be loaded: ${String(err)}`);
    },
  );
  return counter;
}

/**
 * The estimate of a count_tokens body (checked already: protocol/requests.ts).
 *
 * @example
 *   countInputTokens({ model: 'm', messages: [{ role: 'user', content: 'Hello, world' }] }, (t) => t.length)
 *   // → 15 ('Hello, world'.length + MESSAGE_OVERHEAD)
 */
export function countInputTokens(body: Readonly<Json>, count: Counter): number {
  let total = 0;
  const system = body.system;
  if (typeof system === 'string' ? system.length > 0 : Array.isArray(system) && system.length > 0) total += MESSAGE_OVERHEAD + blocksTokens(system, count);
  if (Array.isArray(body.messages)) for (const message of body.messages) if (isRecord(message)) total += MESSAGE_OVERHEAD + blocksTokens(message.content, count);
  if (Array.isArray(body.tools)) {
    for (const tool of body.tools) {
      if (!isRecord(tool)) continue;
      const definition = isRecord(tool.input_schema) ? { name: tool.name, description: tool.description, input_schema: tool.input_schema } : { name: tool.name };
      total += count(JSON.stringify(definition));
    }
  }
  return total;
}

/** A content (a string or blocks) counted block by block. */
function blocksTokens(content: unknown, count: Counter): number {
  if (typeof content === 'string') return count(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const block of content) {
    if (!isRecord(block)) continue;
    switch (block.type) {
      case 'text':
        total += typeof block.text === 'string' ? count(block.text) : 0;
        break;
      case 'thinking':
        total += typeof block.thinking === 'string' ? count(block.thinking) : 0;
        break;
      case 'tool_use':
        total += count(typeof block.name === 'string' ? block.name : '') + count(JSON.stringify(block.input ?? {}));
        break;
      case 'tool_result':
        total += blocksTokens(block.content, count);
        break;
      default:
      // images, documents, redacted thinking, server tools' blocks: not counted (see the header).
    }
  }
  return total;
}

const encoder = new TextEncoder();

/** The count_tokens "adapter" of every provider but anthropic: answers at once, with no upstream request. */
export const localTokenCounter: Provider = {
  async call(call: ProviderCall, sink: AttemptSink): Promise<void> {
    const started = performance.now();
    const count = await loadCounter();
    call.sentAt = call.headersAt = performance.now();
    const body = encoder.encode(JSON.stringify({ input_tokens: countInputTokens(call.body, count) }));
    call.readAt = performance.now();
    // No usage: nothing was generated, and no provider was asked.
    sink.reply(200, 'application/json', [], body, null, performance.now() - started);
  },
  probe: () => null,
};
