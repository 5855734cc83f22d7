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

export function refuser(dropParams: boolean): Refuse {
  return (param, why) => {
    if (!dropParams) throw new GatewayError('unsupported_parameter', `${param}: ${why} (set drop_params: true to drop it)`);
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
