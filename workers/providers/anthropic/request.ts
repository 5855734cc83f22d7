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

export interface RequestOptions {
  /** The upstream model id. */
  readonly model: string;
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
}

/** The tool JSON mode forces; its input is the answer. Only used when the caller sent no tools. */
export const JSON_TOOL = 'json_response';

/** Anthropic requires max_tokens; OpenAI's callers often send none. */
export const DEFAULT_MAX_TOKENS = 4096;

type Block = Record<string, unknown>;
interface Turn {
  readonly role: 'user' | 'assistant';
  readonly content: Block[];
}

/**
 * OpenAI parameters Anthropic has no equivalent for, each with the values
 * that ask for nothing (so `n: 1` or `logprobs: false` pass).
 */
const REFUSED: Readonly<Record<string, (value: unknown) => boolean>> = {
  n: (v) => v === 1,
  logit_bias: (v) => isRecord(v) && Object.keys(v).length === 0,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  seed: () => false,
  audio: () => false,
  modalities: (v) => Array.isArray(v) && v.every((m) => m === 'text'),
  prediction: () => false,
  reasoning_effort: () => false,
  web_search_options: () => false,
  functions: () => false,
  function_call: () => false,
  store: (v) => v === false,
  service_tier: (v) => v === 'auto' || v === 'default',
  verbosity: () => false,
};

export function toMessagesRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse = (param: string, why: string): void => {
    if (!options.dropParams) throw new GatewayError('unsupported_parameter', `${param}: ${why} (set drop_params: true to drop it)`);
  };
  for (const param of Object.keys(REFUSED)) {
    const value = body[param];
    if (value !== undefined && value !== null && !(REFUSED[param] as (v: unknown) => boolean)(value)) refuse(param, 'the anthropic provider has no equivalent');
  }

  const { system, turns } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { model: options.model, max_tokens: maxTokens(body) };
  if (system.length > 0) out.system = system;
  out.messages = turns;
  const stop = stopSequences(body.stop);
  if (stop !== null) out.stop_sequences = stop;
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (typeof body.user === 'string' && body.user.length > 0) out.metadata = { user_id: body.user };
  const tools = toolsOf(body.tools, refuse);
  const json = jsonMode(body.response_format, tools.length > 0, refuse);
  if (json !== null) {
    out.tools = [{ name: JSON_TOOL, description: 'Answer with a JSON value that matches the input schema.', input_schema: json }];
    out.tool_choice = { type: 'tool', name: JSON_TOOL };
  } else if (tools.length > 0) {
    out.tools = tools;
    const choice = toolChoice(body.tool_choice, body.parallel_tool_calls === false);
    if (choice !== null) out.tool_choice = choice;
  }
  if (body.stream === true) out.stream = true;
  return out;
}

function maxTokens(body: Readonly<Record<string, unknown>>): number {
  const value = body.max_completion_tokens ?? body.max_tokens;
  return typeof value === 'number' ? value : DEFAULT_MAX_TOKENS;
}

function stopSequences(stop: unknown): string[] | null {
  const list = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : [];
  const kept = list.filter((s): s is string => typeof s === 'string' && s.length > 0);
  return kept.length > 0 ? kept : null;
}

function conversation(messages: unknown, refuse: (param: string, why: string) => void): { system: Block[]; turns: Turn[] } {
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
function contentBlocks(content: unknown, at: string, images: boolean, refuse: (param: string, why: string) => void): Block[] {
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
const textBlock = (text: string): Block[] => (text.trim().length > 0 ? [{ type: 'text', text }] : []);

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

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
    const fn = isRecord(call) ? call.function : undefined;
    if (!isRecord(call) || typeof call.id !== 'string' || !isRecord(fn) || typeof fn.name !== 'string') {
      throw new GatewayError('invalid_request', `${where}: must have an id and a function with a name`);
    }
    return { type: 'tool_use', id: call.id, name: fn.name, input: toolInput(fn.arguments, `${where}.function.arguments`) };
  });
}

/** Arguments are a JSON string in OpenAI's format and an object in Anthropic's; an empty string is no arguments. */
function toolInput(args: unknown, at: string): Record<string, unknown> {
  if (args === undefined || args === null || args === '') return {};
  let input: unknown = args;
  if (typeof args === 'string') {
    try {
      input = JSON.parse(args);
    } catch {
      throw new GatewayError('invalid_request', `${at}: is not JSON`);
    }
  }
  if (!isRecord(input)) throw new GatewayError('invalid_request', `${at}: must be a JSON object`);
  return input;
}

function toolResult(message: Record<string, unknown>, at: string, refuse: (param: string, why: string) => void): Block {
  if (typeof message.tool_call_id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
  const block: Block = { type: 'tool_result', tool_use_id: message.tool_call_id };
  const content = typeof message.content === 'string' ? message.content.trim().length > 0 ? message.content : null : contentBlocks(message.content, `${at}.content`, false, refuse);
  if (content !== null && content.length > 0) block.content = content;
  return block;
}

function toolsOf(tools: unknown, refuse: (param: string, why: string) => void): Block[] {
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

/** The schema JSON mode forces, or null when the caller asked for text (or nothing). */
function jsonMode(format: unknown, hasTools: boolean, refuse: (param: string, why: string) => void): Record<string, unknown> | null {
  if (!isRecord(format) || format.type === 'text') return null;
  let schema: Record<string, unknown> | null = null;
  if (format.type === 'json_object') schema = { type: 'object' };
  else if (format.type === 'json_schema' && isRecord(format.json_schema) && isRecord(format.json_schema.schema)) schema = format.json_schema.schema;
  if (schema === null) {
    refuse('response_format.type', `"${String(format.type)}" has no equivalent`);
    return null;
  }
  if (hasTools) {
    refuse('response_format', 'a JSON answer together with tools has no equivalent');
    return null;
  }
  return schema;
}
