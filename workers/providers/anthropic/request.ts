/**
 * A chat completions request as an Anthropic Messages request (pure; the
 * golden files in anthropic/golden/ are its examples). CONTRACT.md, Native
 * providers; where the contract is silent, Anthropic's API reference:
 * - `system` and `developer` messages, wherever they are, become `system`
 *   text blocks, in order;
 * - user and assistant turns keep their order; consecutive turns of one
 *   role are merged (so the `tool` results that follow an assistant turn
 *   form one user turn, before any user text that comes next); assistant
 *   `tool_calls` become `tool_use` blocks (arguments parsed), `tool`
 *   messages `tool_result` blocks; images (`image_url`, data or http URL)
 *   become image blocks. No blank text block is sent;
 * - `tools` (function tools) and `tool_choice` (`auto`, `none`, `required`
 *   → `any`, a named function → `tool`), `parallel_tool_calls: false` →
 *   `disable_parallel_tool_use`;
 * - `max_completion_tokens` or `max_tokens` (4096 when neither),
 *   `temperature`, `top_p`, `stop` → `stop_sequences`, `user` →
 *   `metadata.user_id`, `stream`;
 * - `response_format` `json_schema` / `json_object`: Anthropic's JSON mode,
 *   one forced tool whose input is the answer (the response and stream
 *   translators turn it back into content);
 * - an OpenAI parameter Anthropic cannot honour (`n` > 1, `logit_bias`,
 *   `logprobs`, penalties, `seed`, audio, …) is 400 `unsupported_parameter`
 *   naming it, or dropped with `drop_params`; a field that is no OpenAI
 *   parameter is not sent.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { isRecord } from '../compatible.js';
import { DATA_URL, JSON_TOOL, JSON_TOOL_DESCRIPTION, isBlank, jsonSchemaOf, maxTokensOf, refuseUnhonoured, refuser, stopSequences, toolArguments, toolCallOf, type Refuse } from '../chat-request.js';

export { JSON_TOOL };

export interface RequestOptions {
  /** The upstream model id. */
  readonly model: string;
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
}

/** Anthropic requires max_tokens; OpenAI's callers often send none. */
export const DEFAULT_MAX_TOKENS = 4096;

type Block = Record<string, unknown>;
interface Turn {
  readonly role: 'user' | 'assistant';
  readonly content: Block[];
}

export function toMessagesRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse = refuser(options.dropParams);
  refuseUnhonoured(body, 'anthropic', refuse);

  const { system, turns } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { model: options.model, max_tokens: maxTokensOf(body) ?? DEFAULT_MAX_TOKENS };
  if (system.length > 0) out.system = system;
  out.messages = turns;
  const stop = stopSequences(body.stop);
  if (stop !== null) out.stop_sequences = stop;
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (typeof body.user === 'string' && body.user.length > 0) out.metadata = { user_id: body.user };
  const tools = toolsOf(body.tools, refuse);
  const json = jsonSchemaOf(body.response_format, tools.length > 0, refuse);
  if (json !== null) {
    out.tools = [{ name: JSON_TOOL, description: JSON_TOOL_DESCRIPTION, input_schema: json }];
    out.tool_choice = { type: 'tool', name: JSON_TOOL };
  } else if (tools.length > 0) {
    out.tools = tools;
    const choice = toolChoice(body.tool_choice, body.parallel_tool_calls === false);
    if (choice !== null) out.tool_choice = choice;
  }
  if (body.stream === true) out.stream = true;
  return out;
}

function conversation(messages: unknown, refuse: Refuse): { system: Block[]; turns: Turn[] } {
  const system: Block[] = [];
  const turns: Turn[] = [];
  const push = (role: Turn['role'], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last !== undefined && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  (messages as readonly unknown[]).forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw new GatewayError('invalid_request', `${at}: must be an object`);
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...contentBlocks(message.content, `${at}.content`, false, refuse));
        break;
      case 'user':
        push('user', contentBlocks(message.content, `${at}.content`, true, refuse));
        break;
      case 'assistant':
        push('assistant', [...contentBlocks(message.content, `${at}.content`, false, refuse), ...toolUses(message.tool_calls, at)]);
        break;
      case 'tool':
        push('user', [toolResult(message, at, refuse)]);
        break;
      default:
        // `function` (the deprecated form of `tool`) included.
        refuse(`${at}.role`, `role "${String(message.role)}" has no equivalent`);
    }
  });
  return { system, turns };
}

/** Text (and, in user turns, image) blocks of a message's content; blank text is left out. */
function contentBlocks(content: unknown, at: string, images: boolean, refuse: Refuse): Block[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return textBlock(content);
  if (!Array.isArray(content)) throw new GatewayError('invalid_request', `${at}: must be a string or an array of content parts`);
  const blocks: Block[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) throw new GatewayError('invalid_request', `${where}: must be an object`);
    if (part.type === 'text') blocks.push(...textBlock(typeof part.text === 'string' ? part.text : ''));
    // An assistant's refusal part was its text.
    else if (part.type === 'refusal') blocks.push(...textBlock(typeof part.refusal === 'string' ? part.refusal : ''));
    else if (part.type === 'image_url' && images) {
      const image = imageBlock(part.image_url, `${where}.image_url`);
      if (image !== null) blocks.push(image);
    } else refuse(`${where}.type`, `content part "${String(part.type)}" has no equivalent here`);
  });
  return blocks;
}

/** Anthropic refuses text blocks that are empty or only whitespace. */
const textBlock = (text: string): Block[] => (isBlank(text) ? [] : [{ type: 'text', text }]);

function imageBlock(image: unknown, at: string): Block | null {
  const url = isRecord(image) ? image.url : undefined;
  if (typeof url !== 'string' || url.length === 0) throw new GatewayError('invalid_request', `${at}.url: must be a URL`);
  const data = DATA_URL.exec(url);
  if (data !== null) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new GatewayError('invalid_request', `${at}.url: must be an http(s) or base64 data URL`);
}

function toolUses(calls: unknown, at: string): Block[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new GatewayError('invalid_request', `${at}.tool_calls: must be an array`);
  return calls.map((call, j) => {
    const where = `${at}.tool_calls[${j}]`;
    const { id, name, arguments: args } = toolCallOf(call, where);
    return { type: 'tool_use', id, name, input: toolArguments(args, `${where}.function.arguments`) };
  });
}

function toolResult(message: Record<string, unknown>, at: string, refuse: Refuse): Block {
  if (typeof message.tool_call_id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
  const block: Block = { type: 'tool_result', tool_use_id: message.tool_call_id };
  const content = typeof message.content === 'string' ? (isBlank(message.content) ? null : message.content) : contentBlocks(message.content, `${at}.content`, false, refuse);
  if (content !== null && content.length > 0) block.content = content;
  return block;
}

function toolsOf(tools: unknown, refuse: Refuse): Block[] {
  if (!Array.isArray(tools)) return [];
  const out: Block[] = [];
  tools.forEach((tool, i) => {
    const fn = isRecord(tool) ? tool.function : undefined;
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(fn) || typeof fn.name !== 'string') {
      refuse(`tools[${i}].type`, `only function tools have an equivalent`);
      return;
    }
    const block: Block = { name: fn.name };
    if (typeof fn.description === 'string') block.description = fn.description;
    block.input_schema = isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
    out.push(block);
  });
  return out;
}

function toolChoice(choice: unknown, serial: boolean): Block | null {
  let out: Block | null = null;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'required') out = { type: 'any' };
  else if (choice === 'none') return { type: 'none' };
  else if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') out = { type: 'tool', name: choice.function.name };
  if (serial) out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}
