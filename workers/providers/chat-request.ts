/**
 * What every translating adapter reads the same way out of a chat
 * completions request (CONTRACT.md, Native providers, Request): the
 * conversation as turns of blocks (system and developer messages apart,
 * consecutive turns of one role merged, so tool results form the next user
 * turn; no blank text block), the OpenAI parameters no translated provider
 * can honour (400 `unsupported_parameter`, or dropped with `drop_params`),
 * the stop list, the token limit, tool-call arguments and data URLs. The
 * providers' own block shapes are theirs (a BlockMaker).
 */
import { GatewayError } from '../../protocol/errors.js';
import { isRecord } from './compatible.js';

/** Refuses a parameter (400 unsupported_parameter naming it) unless the deployment drops what it cannot honour. */
export type Refuse = (param: string, why: string) => void;

export function refuser(dropParams: boolean): Refuse {
  return (param, why) => {
    if (!dropParams) throw new GatewayError('unsupported_parameter', `${param}: ${why} (set drop_params: true to drop it)`);
  };
}

/**
 * OpenAI parameters that neither Anthropic nor Bedrock has an equivalent for, each with the
 * values that ask for nothing (so `n: 1` or `logprobs: false` pass).
 */
const UNHONOURED: Readonly<Record<string, (value: unknown) => boolean>> = {
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

/** Refuses each parameter of UNHONOURED the body sets to a value that asks for something. */
export function refuseUnhonoured(body: Readonly<Record<string, unknown>>, provider: string, refuse: Refuse): void {
  for (const param of Object.keys(UNHONOURED)) {
    const value = body[param];
    if (value !== undefined && value !== null && !(UNHONOURED[param] as (v: unknown) => boolean)(value)) refuse(param, `the ${provider} provider has no equivalent`);
  }
}

/** `max_completion_tokens`, else `max_tokens`; null when neither is a number. */
export function maxTokensOf(body: Readonly<Record<string, unknown>>): number | null {
  const value = body.max_completion_tokens ?? body.max_tokens;
  return typeof value === 'number' ? value : null;
}

/** `stop` (a string or a list) as a list without empty strings; null when nothing is left. */
export function stopSequences(stop: unknown): string[] | null {
  const list = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : [];
  const kept = list.filter((s): s is string => typeof s === 'string' && s.length > 0);
  return kept.length > 0 ? kept : null;
}

/** Text that is empty or only whitespace: no translated provider takes it as a block. */
export const isBlank = (text: string): boolean => text.trim().length === 0;

/** A base64 data URL: its media type and data. */
export const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** Arguments are a JSON string in OpenAI's format and an object in the providers'; an empty string is no arguments. */
function toolArguments(args: unknown, at: string): Record<string, unknown> {
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

/** The schema a `response_format` asks the answer to match (`{"type":"object"}` for json_object); null for text or none. */
export function jsonSchemaOf(format: unknown, hasTools: boolean, refuse: Refuse): Record<string, unknown> | null {
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

/** The tool the JSON mode of a provider without one forces (Anthropic, Bedrock); its input is the answer. Only used when the caller sent no tools. */
export const JSON_TOOL = 'json_response';
export const JSON_TOOL_DESCRIPTION = 'Answer with a JSON value that matches the input schema.';

/** Whether a request forces the JSON tool (a JSON `response_format` and no tools of its own): the answer's tool input is its content. */
export function jsonModeOf(body: Readonly<Record<string, unknown>>): boolean {
  const format = body.response_format;
  return isRecord(format) && (format.type === 'json_schema' || format.type === 'json_object') && !(Array.isArray(body.tools) && body.tools.length > 0);
}

/** The caller asked for the usage chunk (`stream_options.include_usage`). */
export const includesUsage = (body: Readonly<Record<string, unknown>>): boolean => isRecord(body.stream_options) && body.stream_options.include_usage === true;

/** A provider's content blocks, made from what the conversation holds. */
export interface BlockMaker<B> {
  /** Text that is not blank. */
  text(text: string): B;
  /** An `image_url` part of a user message (null: refused and dropped). */
  image(image: unknown, at: string): B | null;
  /** An assistant's tool call, its arguments parsed. */
  toolUse(call: { readonly id: string; readonly name: string; readonly input: Record<string, unknown> }): B;
  /** A `tool` message's result (`content` as the caller sent it). */
  toolResult(toolCallId: string, content: unknown, at: string): B;
}

export interface Turn<B> {
  readonly role: 'user' | 'assistant';
  readonly content: B[];
}

export interface Conversation<B> {
  /** The system and developer messages' blocks, in order. */
  readonly system: B[];
  readonly turns: Array<Turn<B>>;
  /** The names of the tools the conversation's assistant turns called. */
  readonly toolNames: ReadonlySet<string>;
  /** The conversation holds tool calls or tool results. */
  readonly toolBlocks: boolean;
}

/**
 * `messages` as turns of blocks: `system` and `developer` messages apart; user and assistant turns
 * in order, consecutive turns of one role merged (so the `tool` results that follow an assistant
 * turn are one user turn, before any user text that comes next); an assistant turn's text, then
 * its tool calls; no blank text block, so an assistant turn of only tool calls has none.
 */
export function chatTurns<B>(messages: unknown, make: BlockMaker<B>, refuse: Refuse): Conversation<B> {
  const system: B[] = [];
  const turns: Array<Turn<B>> = [];
  const toolNames = new Set<string>();
  let toolBlocks = false;
  const push = (role: Turn<B>['role'], blocks: B[]) => {
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
        system.push(...contentBlocks(message.content, `${at}.content`, false, make, refuse));
        break;
      case 'user':
        push('user', contentBlocks(message.content, `${at}.content`, true, make, refuse));
        break;
      case 'assistant': {
        const uses = toolCalls(message.tool_calls, at);
        for (const use of uses) toolNames.add(use.name);
        toolBlocks ||= uses.length > 0;
        push('assistant', [...contentBlocks(message.content, `${at}.content`, false, make, refuse), ...uses.map((use) => make.toolUse(use))]);
        break;
      }
      case 'tool':
        if (typeof message.tool_call_id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
        toolBlocks = true;
        push('user', [make.toolResult(message.tool_call_id, message.content, at)]);
        break;
      default:
        // `function` (the deprecated form of `tool`) included.
        refuse(`${at}.role`, `role "${String(message.role)}" has no equivalent`);
    }
  });
  return { system, turns, toolNames, toolBlocks };
}

/** Text (and, where `images`, image) blocks of a message's content; blank text is left out. */
export function contentBlocks<B>(content: unknown, at: string, images: boolean, make: BlockMaker<B>, refuse: Refuse): B[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return isBlank(content) ? [] : [make.text(content)];
  if (!Array.isArray(content)) throw new GatewayError('invalid_request', `${at}: must be a string or an array of content parts`);
  const blocks: B[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) throw new GatewayError('invalid_request', `${where}: must be an object`);
    // An assistant's refusal part was its text.
    const text = part.type === 'text' ? part.text : part.type === 'refusal' ? part.refusal : undefined;
    if (part.type === 'text' || part.type === 'refusal') {
      if (typeof text === 'string' && !isBlank(text)) blocks.push(make.text(text));
    } else if (part.type === 'image_url' && images) {
      const image = make.image(part.image_url, `${where}.image_url`);
      if (image !== null) blocks.push(image);
    } else refuse(`${where}.type`, `content part "${String(part.type)}" has no equivalent here`);
  });
  return blocks;
}

/** An assistant's `tool_calls`, checked, their arguments parsed. */
function toolCalls(calls: unknown, at: string): Array<{ id: string; name: string; input: Record<string, unknown> }> {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new GatewayError('invalid_request', `${at}.tool_calls: must be an array`);
  return calls.map((call, j) => {
    const where = `${at}.tool_calls[${j}]`;
    const fn = isRecord(call) ? call.function : undefined;
    if (!isRecord(call) || typeof call.id !== 'string' || !isRecord(fn) || typeof fn.name !== 'string') {
      throw new GatewayError('invalid_request', `${where}: must have an id and a function with a name`);
    }
    return { id: call.id, name: fn.name, input: toolArguments(fn.arguments, `${where}.function.arguments`) };
  });
}

/** A function tool of `tools`: its name, description and parameters' schema (an empty object schema when it has none). */
export interface FunctionTool {
  readonly name: string;
  readonly description: string | null;
  readonly parameters: Record<string, unknown>;
}

/** The function tools of `tools`; any other kind is refused (or dropped with drop_params). */
export function functionTools(tools: unknown, refuse: Refuse): FunctionTool[] {
  if (!Array.isArray(tools)) return [];
  const out: FunctionTool[] = [];
  tools.forEach((tool, i) => {
    const fn = isRecord(tool) ? tool.function : undefined;
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(fn) || typeof fn.name !== 'string') {
      refuse(`tools[${i}].type`, `only function tools have an equivalent`);
      return;
    }
    out.push({ name: fn.name, description: typeof fn.description === 'string' ? fn.description : null, parameters: isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} } });
  });
  return out;
}
