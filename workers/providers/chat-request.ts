/**
 * What every translating adapter does with a chat completions request
 * before it speaks its own dialect (CONTRACT.md, Native providers,
 * Request): refuse (or, with `drop_params`, drop) what the provider cannot
 * honour, walk the messages by role, read content parts, tool calls and
 * function tools, and merge consecutive turns of one role. Pure; the
 * provider's request.ts says what each piece becomes.
 */
import { GatewayError } from '../../protocol/errors.js';
import { isRecord } from './compatible.js';

/** Refuses `param` (400 `unsupported_parameter`), or returns so that the caller drops it (`drop_params`). */
export type Refuse = (param: string, why: string) => void;

const NOTHING_DROPPABLE: ReadonlySet<string> = new Set();

/**
 * `droppable`: the top-level parameters the caller never asked for by name (ProviderCall.droppable:
 * a Messages call's `parallel_tool_calls`, derived from `disable_parallel_tool_use`), dropped
 * whatever `drop_params` says.
 */
export function refuser(dropParams: boolean, droppable: ReadonlySet<string> = NOTHING_DROPPABLE): Refuse {
  return (param, why) => {
    if (!dropParams && !droppable.has(param)) throw new GatewayError('unsupported_parameter', `${param}: ${why} (set drop_params: true to drop it)`);
  };
}

/**
 * OpenAI parameters a provider has no equivalent for, each with the values
 * that ask for nothing (so `n: 1` or `logprobs: false` pass).
 */
export type NoEquivalent = Readonly<Record<string, (value: unknown) => boolean>>;

/** OpenAI parameters no translating provider has an equivalent for (each provider adds its own). */
export const OPENAI_ONLY: NoEquivalent = {
  logit_bias: (v) => isRecord(v) && Object.keys(v).length === 0,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
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

/** Sampling controls of OpenAI's that Anthropic's Messages and Bedrock's Converse lack (Gemini has them): one candidate, no penalties, no seed. */
export const NO_SAMPLING_CONTROLS: NoEquivalent = {
  n: (v) => v === 1,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  seed: () => false,
};

/** Refuses each parameter of `params` the body sets to a value that asks for something. */
export function refuseUnsupported(body: Readonly<Record<string, unknown>>, params: NoEquivalent, provider: string, refuse: Refuse): void {
  for (const param of Object.keys(params)) {
    const value = body[param];
    if (value !== undefined && value !== null && !(params[param] as (v: unknown) => boolean)(value)) refuse(param, `the ${provider} provider has no equivalent`);
  }
}

/** `stop` (a string or a list) as a list of stop sequences, empty strings left out; null for none. */
export function stopSequences(stop: unknown): string[] | null {
  const list = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : [];
  const kept = list.filter((s): s is string => typeof s === 'string' && s.length > 0);
  return kept.length > 0 ? kept : null;
}

/** A base64 data URL: its media type and data. */
export const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** What each role's messages become; `at` is the message's path (`messages[3]`) for error messages. */
export interface MessageHandlers {
  /** `system` and `developer`. */
  system(message: Record<string, unknown>, at: string): void;
  user(message: Record<string, unknown>, at: string): void;
  assistant(message: Record<string, unknown>, at: string): void;
  tool(message: Record<string, unknown>, at: string): void;
}

/** Hands each message to its role's handler; another role (`function`, the deprecated form of `tool`) has no equivalent. */
export function eachMessage(messages: unknown, handlers: MessageHandlers, refuse: Refuse): void {
  (messages as readonly unknown[]).forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw new GatewayError('invalid_request', `${at}: must be an object`);
    switch (message.role) {
      case 'system':
      case 'developer':
        return handlers.system(message, at);
      case 'user':
        return handlers.user(message, at);
      case 'assistant':
        return handlers.assistant(message, at);
      case 'tool':
        return handlers.tool(message, at);
      default:
        refuse(`${at}.role`, `role "${String(message.role)}" has no equivalent`);
    }
  });
}

/** Turns of a conversation, consecutive blocks of one role merged into one turn (so tool results and the user text after them are one user turn). */
export class Turns<R extends string, B> {
  readonly list: Array<{ readonly role: R; readonly blocks: B[] }> = [];

  push(role: R, blocks: B[]): void {
    if (blocks.length === 0) return;
    const last = this.list[this.list.length - 1];
    if (last !== undefined && last.role === role) last.blocks.push(...blocks);
    else this.list.push({ role, blocks });
  }
}

/**
 * A message's content as the provider's blocks: a string, or text and
 * refusal parts (an assistant's refusal part was its text) through `text`,
 * which leaves blank text out; other parts through `other`, null for a part
 * it has no equivalent for (refused).
 */
export function contentParts<B>(content: unknown, at: string, text: (text: string) => B[], other: (part: Record<string, unknown>, at: string) => B | null, refuse: Refuse): B[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return text(content);
  if (!Array.isArray(content)) throw new GatewayError('invalid_request', `${at}: must be a string or an array of content parts`);
  const blocks: B[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) throw new GatewayError('invalid_request', `${where}: must be an object`);
    if (part.type === 'text') blocks.push(...text(typeof part.text === 'string' ? part.text : ''));
    else if (part.type === 'refusal') blocks.push(...text(typeof part.refusal === 'string' ? part.refusal : ''));
    else {
      const block = other(part, where);
      if (block !== null) blocks.push(block);
      else refuse(`${where}.type`, `content part "${String(part.type)}" has no equivalent here`);
    }
  });
  return blocks;
}

/** No media in this role's messages. */
export const textOnly = (): null => null;

/** An assistant tool call, checked: its id, function name and arguments as an object. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

export function toolCalls(calls: unknown, at: string): ToolCall[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new GatewayError('invalid_request', `${at}.tool_calls: must be an array`);
  return calls.map((call, j) => {
    const where = `${at}.tool_calls[${j}]`;
    const fn = isRecord(call) ? call.function : undefined;
    if (!isRecord(call) || typeof call.id !== 'string' || !isRecord(fn) || typeof fn.name !== 'string') {
      throw new GatewayError('invalid_request', `${where}: must have an id and a function with a name`);
    }
    return { id: call.id, name: fn.name, args: functionArguments(fn.arguments, `${where}.function.arguments`) };
  });
}

/** Arguments are a JSON string in OpenAI's format and an object in the providers'; an empty string is no arguments. */
function functionArguments(args: unknown, at: string): Record<string, unknown> {
  if (args === undefined || args === null || args === '') return {};
  let parsed: unknown = args;
  if (typeof args === 'string') {
    try {
      parsed = JSON.parse(args);
    } catch {
      throw new GatewayError('invalid_request', `${at}: is not JSON`);
    }
  }
  if (!isRecord(parsed)) throw new GatewayError('invalid_request', `${at}: must be a JSON object`);
  return parsed;
}

/** A function tool of the request. */
export interface FunctionTool {
  readonly name: string;
  readonly description?: string;
  /** The JSON Schema of its parameters, when it has one. */
  readonly parameters?: Record<string, unknown>;
}

/** The request's function tools; any other tool has no equivalent (refused). */
export function functionTools(tools: unknown, refuse: Refuse): FunctionTool[] {
  if (!Array.isArray(tools)) return [];
  const out: FunctionTool[] = [];
  tools.forEach((tool, i) => {
    const fn = isRecord(tool) ? tool.function : undefined;
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(fn) || typeof fn.name !== 'string') {
      refuse(`tools[${i}].type`, 'only function tools have an equivalent');
      return;
    }
    out.push({ name: fn.name, ...(typeof fn.description === 'string' ? { description: fn.description } : {}), ...(isRecord(fn.parameters) ? { parameters: fn.parameters } : {}) });
  });
  return out;
}

/** `max_completion_tokens`, else `max_tokens`; null when neither is a number. */
export function maxTokensOf(body: Readonly<Record<string, unknown>>): number | null {
  const value = body.max_completion_tokens ?? body.max_tokens;
  return typeof value === 'number' ? value : null;
}

/** The tool the JSON mode of a provider without one forces (anthropic, bedrock); its input is the answer. Only used when the caller sent no tools. */
export const JSON_TOOL = 'json_response';
export const JSON_TOOL_DESCRIPTION = 'Answer with a JSON value that matches the input schema.';

/** The schema a `response_format` asks the answer to match (`{"type":"object"}` for json_object), or null when the caller asked for text (or nothing). */
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

/** Whether a request forces the JSON tool (a JSON `response_format` and no tools of its own): the answer's tool input is its content. */
export function jsonModeOf(body: Readonly<Record<string, unknown>>): boolean {
  const format = body.response_format;
  return isRecord(format) && (format.type === 'json_schema' || format.type === 'json_object') && !(Array.isArray(body.tools) && body.tools.length > 0);
}

/** The caller asked for the usage chunk (`stream_options.include_usage`). */
export const includesUsage = (body: Readonly<Record<string, unknown>>): boolean => isRecord(body.stream_options) && body.stream_options.include_usage === true;
