/**
 * An Anthropic Messages request → a chat completions request, for every
 * deployment that does not speak Messages itself (CONTRACT.md, Anthropic
 * Messages API (inbound), "To every other deployment: translated through
 * the chat path", Request). Pure; the body passed the hand check or the
 * schema already (protocol/request-body.ts plainMessages, protocol/
 * requests.ts checkMessagesRequest: `max_tokens` is required there); the
 * blocks' own fields are checked here, a 400 `invalid_request` naming the
 * field. Where the contract is silent (docs/PROVIDERS.md, "Anthropic
 * Messages inbound: mapping"):
 *
 * - `system` text blocks are one system message, joined with `\n`;
 * - a user turn's `tool_result` blocks are `tool` messages first, in order
 *   (Anthropic puts them first in the turn; chat wants them right after
 *   the assistant's calls), then one user message with the rest: text
 *   alone is a string (text blocks joined with `\n`), with images or
 *   documents a list of parts; an image inside a `tool_result` (chat's tool
 *   messages carry text only) goes at the head of that user message;
 * - an assistant turn's text blocks are joined with nothing between them
 *   (Anthropic splits one answer into blocks around citations);
 * - `document` blocks: base64 PDF → a `file` part, plain text → text; by
 *   URL or file id, and images by file id, are 400 `unsupported_parameter`
 *   (chat cannot carry them, and dropping them would change the question);
 * - blocks only Anthropic has (`thinking`, `redacted_thinking`, server
 *   tools' blocks, …) and tools that are not custom tools (`web_search_…`,
 *   `bash_…`, …) are dropped, as every Anthropic-only field is; a
 *   `tool_choice` naming a dropped tool is dropped with it;
 * - `max_tokens` → `max_completion_tokens` (the Responses translator's
 *   choice; OpenAI's reasoning models refuse `max_tokens`; every chat
 *   adapter reads either);
 * - `output_config.format` `json_schema` → `response_format` (named
 *   `output`); `output_config.effort`, a tool's `strict` and the rest are
 *   dropped.
 *
 * @example
 *   toChatRequest({ model: 'm', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] })
 *   // → { chat: { model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], max_completion_tokens: 64 }, thinking: null }
 *   toChatRequest({ ..., thinking: { type: 'enabled', budget_tokens: 4000 } }).thinking
 *   // → { type: 'budget', budgetTokens: 4000, shown: true }
 */
import { GatewayError } from '../../../protocol/errors.js';
import { showsThinking, type Thinking } from '../../providers/adapter.js';
import { toProviderToolId } from './ids.js';

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

export { showsThinking, type Thinking };

/** The chat request to send, and what the chat request cannot say. */
export interface ChatTranslation {
  readonly chat: Json;
  /** null: the request did not say. */
  readonly thinking: Thinking | null;
}

const invalid = (at: string, why: string): GatewayError => new GatewayError('invalid_request', `"${at}": ${why}`);
const unsupported = (at: string, why: string): GatewayError => new GatewayError('unsupported_parameter', `Unsupported parameter: '${at}': ${why}`);

export function toChatRequest(body: Readonly<Json>): ChatTranslation {
  const max = body.max_tokens;
  // The schema's rule, kept here too: the translator is never the one to send a request without it.
  if (max === undefined || max === null) throw new GatewayError('invalid_request', '"max_tokens" is required');
  if (!Number.isSafeInteger(max) || (max as number) < 0) throw invalid('max_tokens', 'must be a non-negative integer');
  const chat: Json = { model: body.model, messages: toMessages(body), max_completion_tokens: max };
  if (typeof body.temperature === 'number') chat.temperature = body.temperature;
  if (typeof body.top_p === 'number') chat.top_p = body.top_p;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  if (isRecord(body.metadata) && typeof body.metadata.user_id === 'string' && body.metadata.user_id.length > 0) chat.user = body.metadata.user_id;
  addTools(body, chat);
  const format = isRecord(body.output_config) && isRecord(body.output_config.format) ? body.output_config.format : null;
  if (format !== null && format.type === 'json_schema' && isRecord(format.schema)) chat.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  if (body.stream === true) {
    chat.stream = true;
    // message_delta's usage needs the chat stream's usage chunk, which chat sends only when asked.
    chat.stream_options = { include_usage: true };
  }
  return { chat, thinking: thinkingOf(body.thinking) };
}

/**
 * `thinking` as the adapters read it; null when absent or not an object with a type. `enabled`
 * without an integer budget (Anthropic refuses it) and types other than `enabled` / `disabled`
 * (`adaptive`, `between_tools`, later ones) leave the amount to the model.
 */
export function thinkingOf(thinking: unknown): Thinking | null {
  if (!isRecord(thinking) || typeof thinking.type !== 'string') return null;
  if (thinking.type === 'disabled') return { type: 'disabled' };
  const shown = thinking.display !== 'omitted';
  const budget = thinking.budget_tokens;
  if (thinking.type === 'enabled' && Number.isSafeInteger(budget) && (budget as number) >= 0) return { type: 'budget', budgetTokens: budget as number, shown };
  return { type: 'adaptive', shown };
}

// ── system and messages ──

function toMessages(body: Readonly<Json>): Json[] {
  const messages: Json[] = [];
  const system = systemText(body.system);
  if (system.length > 0) messages.push({ role: 'system', content: system });
  (body.messages as unknown[]).forEach((raw, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(raw)) throw invalid(at, 'must be an object');
    if (raw.role === 'user') userTurn(raw.content, `${at}.content`, messages);
    else if (raw.role === 'assistant') assistantTurn(raw.content, `${at}.content`, messages);
    else throw invalid(`${at}.role`, 'must be "user" or "assistant"');
  });
  return messages;
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return '';
  return system
    .map((block, j) => {
      if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string') throw invalid(`system[${j}]`, 'must be a text block');
      return block.text;
    })
    .filter((text) => text.length > 0)
    .join('\n');
}

function userTurn(content: unknown, at: string, messages: Json[]): void {
  if (typeof content === 'string') {
    messages.push({ role: 'user', content });
    return;
  }
  const toolMedia: Json[] = [];
  const parts: Json[] = [];
  blocksOf(content, at).forEach((block, j) => {
    const where = `${at}[${j}]`;
    switch (block.type) {
      case 'tool_result':
        messages.push(toolMessage(block, where, toolMedia));
        return;
      case 'text':
        parts.push({ type: 'text', text: textOf(block, where) });
        return;
      case 'image':
        parts.push(imagePart(block, where));
        return;
      case 'document':
        parts.push(documentPart(block, where));
        return;
      default:
      // Anthropic-only content (search results, container uploads, server tools' results, …): dropped.
    }
  });
  const all = [...toolMedia, ...parts];
  if (all.length === 0) return;
  // Text alone goes as a string: every chat upstream takes that; not all take parts.
  if (all.every((p) => p.type === 'text')) messages.push({ role: 'user', content: all.map((p) => p.text as string).join('\n') });
  else messages.push({ role: 'user', content: all });
}

function assistantTurn(content: unknown, at: string, messages: Json[]): void {
  if (typeof content === 'string') {
    messages.push({ role: 'assistant', content });
    return;
  }
  const texts: string[] = [];
  const calls: Json[] = [];
  blocksOf(content, at).forEach((block, j) => {
    const where = `${at}[${j}]`;
    if (block.type === 'text') texts.push(textOf(block, where));
    else if (block.type === 'tool_use') calls.push(toolCall(block, where));
    // thinking, redacted_thinking, server_tool_use and the rest: only the model that wrote them reads them.
  });
  if (texts.length === 0 && calls.length === 0) return;
  const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (calls.length > 0) message.tool_calls = calls;
  messages.push(message);
}

function blocksOf(content: unknown, at: string): Json[] {
  if (!Array.isArray(content)) throw invalid(at, 'must be a string or an array of content blocks');
  return content.map((block, j) => {
    if (!isRecord(block) || typeof block.type !== 'string') throw invalid(`${at}[${j}]`, 'must be a content block with a type');
    return block;
  });
}

function textOf(block: Json, at: string): string {
  if (typeof block.text !== 'string') throw invalid(`${at}.text`, 'must be a string');
  return block.text;
}

function toolCall(block: Json, at: string): Json {
  if (typeof block.id !== 'string' || block.id.length === 0) throw invalid(`${at}.id`, 'must be a non-empty string');
  if (typeof block.name !== 'string' || block.name.length === 0) throw invalid(`${at}.name`, 'must be a non-empty string');
  const input = block.input ?? {};
  if (!isRecord(input)) throw invalid(`${at}.input`, 'must be an object');
  return { id: toProviderToolId(block.id), type: 'function', function: { name: block.name, arguments: JSON.stringify(input) } };
}

/** A `tool_result` → a tool message: its text blocks joined with `\n`; its images and PDFs go to `media` (the head of the user message after the tool messages). */
function toolMessage(block: Json, at: string, media: Json[]): Json {
  if (typeof block.tool_use_id !== 'string' || block.tool_use_id.length === 0) throw invalid(`${at}.tool_use_id`, 'must be a non-empty string');
  let text: string;
  const content = block.content;
  if (content === undefined || content === null) text = '';
  else if (typeof content === 'string') text = content;
  else {
    const texts: string[] = [];
    blocksOf(content, `${at}.content`).forEach((inner, k) => {
      const where = `${at}.content[${k}]`;
      if (inner.type === 'text') texts.push(textOf(inner, where));
      else if (inner.type === 'image') media.push(imagePart(inner, where));
      else if (inner.type === 'document') {
        const part = documentPart(inner, where);
        if (part.type === 'text') texts.push(part.text as string);
        else media.push(part);
      }
    });
    text = texts.join('\n');
  }
  // CONTRACT.md: an is_error result's text says it is an error (chat's tool message has no flag).
  if (block.is_error === true) text = text.length > 0 ? `Error: ${text}` : 'Error';
  return { role: 'tool', tool_call_id: toProviderToolId(block.tool_use_id), content: text };
}

function imagePart(block: Json, at: string): Json {
  const source = block.source;
  if (!isRecord(source)) throw invalid(`${at}.source`, 'must be an object');
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || typeof source.data !== 'string') throw invalid(`${at}.source`, 'a base64 source needs media_type and data');
    return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string' || source.url.length === 0) throw invalid(`${at}.source.url`, 'must be a URL');
    return { type: 'image_url', image_url: { url: source.url } };
  }
  throw unsupported(`${at}.source.type`, `an image source of type "${String(source.type)}" can be sent to an anthropic deployment only; send it as base64 or url`);
}

function documentPart(block: Json, at: string): Json {
  const source = isRecord(block.source) ? block.source : null;
  if (source?.type === 'base64' && source.media_type === 'application/pdf' && typeof source.data === 'string') {
    const file: Json = { file_data: `data:application/pdf;base64,${source.data}` };
    if (typeof block.title === 'string' && block.title.length > 0) file.filename = block.title;
    return { type: 'file', file };
  }
  if (source?.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  throw unsupported(`${at}.source`, 'through chat completions a document goes as a base64 PDF or as text; any other source can be sent to an anthropic deployment only');
}

// ── tools ──

/** Custom tools → function tools; the tool choice and parallel_tool_calls only beside them (chat refuses either alone). */
function addTools(body: Readonly<Json>, chat: Json): void {
  if (!Array.isArray(body.tools)) return;
  const tools: Json[] = [];
  body.tools.forEach((tool, i) => {
    // Anthropic's own tools (web search, bash, text editor, code execution, …) have a versioned type and no input_schema.
    if (!isRecord(tool) || (tool.type !== undefined && tool.type !== null && tool.type !== 'custom')) return;
    if (typeof tool.name !== 'string' || tool.name.length === 0) throw invalid(`tools[${i}].name`, 'must be a non-empty string');
    if (!isRecord(tool.input_schema)) throw invalid(`tools[${i}].input_schema`, 'must be an object');
    const fn: Json = { name: tool.name };
    if (typeof tool.description === 'string') fn.description = tool.description;
    fn.parameters = tool.input_schema;
    tools.push({ type: 'function', function: fn });
  });
  if (tools.length === 0) return;
  chat.tools = tools;
  const choice = body.tool_choice;
  if (!isRecord(choice)) return;
  if (choice.type === 'auto') chat.tool_choice = 'auto';
  else if (choice.type === 'any') chat.tool_choice = 'required';
  else if (choice.type === 'none') chat.tool_choice = 'none';
  else if (choice.type === 'tool' && tools.some((t) => (t.function as Json).name === choice.name)) chat.tool_choice = { type: 'function', function: { name: choice.name } };
  if (choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
}
