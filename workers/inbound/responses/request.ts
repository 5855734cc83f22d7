/**
 * A Responses API request → a chat completions request, for every
 * deployment that does not serve `/responses` itself (CONTRACT.md, HTTP:
 * `POST /v1/responses`). Pure: the body was checked already
 * (protocol/requests.ts, responsesRequestSchema and refuseStateful); what
 * the chat path cannot honour is refused here, naming the parameter.
 *
 * @example
 *   toChatRequest({ model: 'm', instructions: 'Be brief.', input: 'Hi' })
 *   // → { model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }
 */
import { GatewayError } from '../../../protocol/errors.js';

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const given = (v: unknown): boolean => v !== undefined && v !== null;

function unsupported(param: string, why: string): GatewayError {
  return new GatewayError('unsupported_parameter', `Unsupported parameter: '${param}': ${why}`);
}

/**
 * Responses parameters with a chat parameter of the same meaning, copied
 * under the chat name when given.
 */
const SAME_MEANING: ReadonlyArray<readonly [string, string]> = [
  ['temperature', 'temperature'],
  ['top_p', 'top_p'],
  ['max_output_tokens', 'max_completion_tokens'],
  ['user', 'user'],
  ['safety_identifier', 'safety_identifier'],
  ['prompt_cache_key', 'prompt_cache_key'],
  ['service_tier', 'service_tier'],
];

/** Given and not at their neutral value, these have no chat equivalent. */
const NO_CHAT_EQUIVALENT: Readonly<Record<string, (v: unknown) => boolean>> = {
  max_tool_calls: given,
  top_logprobs: (v) => given(v) && v !== 0,
};

export function toChatRequest(body: Json): Json {
  for (const [param, set] of Object.entries(NO_CHAT_EQUIVALENT)) {
    if (set(body[param])) throw unsupported(param, 'the chat completions path this deployment is served by has no equivalent');
  }
  const chat: Json = { model: body.model, messages: toMessages(body) };
  for (const [from, to] of SAME_MEANING) if (given(body[from])) chat[to] = body[from];
  const tools = body.tools;
  if (Array.isArray(tools) && tools.length > 0) {
    chat.tools = tools.map(toChatTool);
    // Only beside tools: chat refuses a tool choice, or parallel_tool_calls, without any.
    if (given(body.tool_choice)) chat.tool_choice = toChatToolChoice(body.tool_choice);
    if (given(body.parallel_tool_calls)) chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  const text = isRecord(body.text) ? body.text : null;
  const format = text && isRecord(text.format) ? toResponseFormat(text.format) : null;
  if (format) chat.response_format = format;
  if (text && given(text.verbosity)) chat.verbosity = text.verbosity;
  const reasoning = isRecord(body.reasoning) ? body.reasoning : null;
  if (reasoning && given(reasoning.effort)) chat.reasoning_effort = reasoning.effort;
  if (body.stream === true) {
    chat.stream = true;
    // A Responses stream always ends with the usage (response.completed); chat sends it only when asked.
    chat.stream_options = { include_usage: true };
  }
  return chat;
}

// ── input → messages ──

function toMessages(body: Json): Json[] {
  const messages: Json[] = [];
  if (typeof body.instructions === 'string' && body.instructions.length > 0) messages.push({ role: 'system', content: body.instructions });
  const input = body.input;
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  (input as unknown[]).forEach((raw, i) => {
    const item = raw as Json;
    switch (item.type) {
      case undefined:
      case 'message':
        messages.push(toMessage(item, `input[${i}]`));
        return;
      case 'function_call':
        addToolCall(messages, item);
        return;
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : textOf(item.output as Json[], `input[${i}].output`) });
        return;
      case 'reasoning':
        // A reasoning item only means something to the model that wrote it; chat has no way to send it back.
        return;
      default:
        throw unsupported(`input[${i}].type`, `"${String(item.type)}" items cannot be sent through chat completions`);
    }
  });
  return messages;
}

function toMessage(item: Json, at: string): Json {
  const role = item.role as string;
  const content = item.content;
  if (role === 'assistant') return assistantMessage(content, at);
  if (typeof content === 'string') return { role, content };
  const parts = (content as Json[]).map((part, j) => toChatPart(part, `${at}.content[${j}]`));
  // Text alone goes as a string: every chat upstream takes that, not all take parts (nor parts in system messages).
  if (parts.every((p) => p.type === 'text')) return { role, content: parts.map((p) => p.text as string).join('\n') };
  if (role !== 'user') throw unsupported(`${at}.content`, `a ${role} message can carry text only`);
  return { role, content: parts };
}

function assistantMessage(content: unknown, at: string): Json {
  if (typeof content === 'string') return { role: 'assistant', content };
  const texts: string[] = [];
  let refusal: string | null = null;
  (content as Json[]).forEach((part, j) => {
    if ((part.type === 'output_text' || part.type === 'input_text') && typeof part.text === 'string') texts.push(part.text);
    else if (part.type === 'refusal' && typeof part.refusal === 'string') refusal = part.refusal;
    else throw unsupported(`${at}.content[${j}].type`, `an assistant message can carry output_text and refusal parts only`);
  });
  const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (refusal !== null) message.refusal = refusal;
  return message;
}

/** Consecutive function calls, and the assistant text before them, are one chat assistant turn. */
function addToolCall(messages: Json[], item: Json): void {
  const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant') {
    ((last.tool_calls as Json[] | undefined) ?? (last.tool_calls = [])).push(call);
    return;
  }
  messages.push({ role: 'assistant', content: null, tool_calls: [call] });
}

function toChatPart(part: Json, at: string): Json {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'input_image': {
      if (typeof part.image_url !== 'string') throw unsupported(`${at}.file_id`, 'an image by file id cannot be sent through chat completions: send image_url');
      const image: Json = { url: part.image_url };
      if (given(part.detail)) image.detail = part.detail;
      return { type: 'image_url', image_url: image };
    }
    case 'input_file': {
      if (given(part.file_url)) throw unsupported(`${at}.file_url`, 'a file by URL cannot be sent through chat completions: send file_data');
      const file: Json = {};
      for (const key of ['file_data', 'file_id', 'filename']) if (given(part[key])) file[key] = part[key];
      return { type: 'file', file };
    }
    case 'input_audio':
      return { type: 'input_audio', input_audio: part.input_audio };
    default:
      throw unsupported(`${at}.type`, `"${String(part.type)}" content cannot be sent through chat completions`);
  }
}

function textOf(parts: Json[], at: string): string {
  return parts
    .map((part, j) => {
      if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string') return part.text;
      throw unsupported(`${at}[${j}].type`, 'a function call output goes through chat completions as text only');
    })
    .join('');
}

// ── tools, tool choice, output format ──

/** Responses function tools are flat (`{type, name, parameters}`); chat nests them under `function`. */
function toChatTool(raw: unknown, i: number): Json {
  const tool = raw as Json;
  if (tool.type !== 'function') {
    throw unsupported(`tools[${i}].type`, `the built-in tool "${String(tool.type)}" needs a deployment that serves the Responses API itself (params.responses_api); this one is served through chat completions, which has function tools only`);
  }
  if (typeof tool.name !== 'string' || tool.name.length === 0) throw new GatewayError('invalid_request', `"tools[${i}].name" is required`);
  const fn: Json = { name: tool.name };
  for (const key of ['description', 'parameters', 'strict']) if (given(tool[key])) fn[key] = tool[key];
  return { type: 'function', function: fn };
}

function toChatToolChoice(choice: unknown): unknown {
  if (typeof choice === 'string') return choice;
  const c = choice as Json;
  if (c.type === 'function' && typeof c.name === 'string') return { type: 'function', function: { name: c.name } };
  if (c.type === 'allowed_tools' && Array.isArray(c.tools)) {
    const tools = c.tools.map((t: Json, i: number) => {
      if (t.type !== 'function' || typeof t.name !== 'string') throw unsupported(`tool_choice.tools[${i}]`, 'only function tools can be allowed through chat completions');
      return { type: 'function', function: { name: t.name } };
    });
    return { type: 'allowed_tools', allowed_tools: { mode: c.mode ?? 'auto', tools } };
  }
  throw unsupported('tool_choice', `a tool choice of type "${String(c.type)}" cannot be sent through chat completions`);
}

/** `text.format` → chat's `response_format`; null for plain text, chat's default. */
function toResponseFormat(format: Json): Json | null {
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type !== 'json_schema') return null;
  if (typeof format.name !== 'string' || !isRecord(format.schema)) throw new GatewayError('invalid_request', '"text.format": a json_schema format needs "name" and "schema"');
  const schema: Json = { name: format.name, schema: format.schema };
  if (given(format.description)) schema.description = format.description;
  if (given(format.strict)) schema.strict = format.strict;
  return { type: 'json_schema', json_schema: schema };
}
