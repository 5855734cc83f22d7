/**
 * What every translating adapter reads the same way out of a chat
 * completions request (CONTRACT.md, Native providers, Request): the OpenAI
 * parameters no translated provider can honour (400 `unsupported_parameter`,
 * or dropped with `drop_params`), the stop list, the token limit, tool-call
 * arguments and data URLs. The providers' own shapes stay in their folders.
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
export function toolArguments(args: unknown, at: string): Record<string, unknown> {
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

/** An assistant's tool call, checked: its id, function name and raw arguments. */
export function toolCallOf(call: unknown, at: string): { id: string; name: string; arguments: unknown } {
  const fn = isRecord(call) ? call.function : undefined;
  if (!isRecord(call) || typeof call.id !== 'string' || !isRecord(fn) || typeof fn.name !== 'string') {
    throw new GatewayError('invalid_request', `${at}: must have an id and a function with a name`);
  }
  return { id: call.id, name: fn.name, arguments: fn.arguments };
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
