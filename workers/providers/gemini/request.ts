/**
 * A chat completions request as a Gemini `generateContent` request (pure;
 * the golden files in gemini/golden/ are its examples). CONTRACT.md, Native
 * providers; where the contract is silent, Gemini's API reference
 * (`models.generateContent`, `Content`, `GenerationConfig`, `Tool`,
 * `ToolConfig`):
 * - `system` and `developer` messages, wherever they are, become
 *   `systemInstruction` text parts, in order;
 * - user turns are role `user`, assistant turns role `model`; consecutive
 *   turns of one role are merged (so the `tool` results that follow a model
 *   turn form one user turn); parts: text, images (`inlineData` for a data
 *   URL, `fileData` for an http(s) URL), audio and files (`inlineData`);
 *   assistant `tool_calls` become `functionCall` parts (arguments parsed,
 *   the thought signature their `id` carries, tool-call-id.ts, back on the
 *   part); `tool` messages `functionResponse` parts, their `name` recovered
 *   from the tool call they answer, the text as `response.output`. No blank
 *   text part is sent;
 * - `generationConfig`: `temperature`, `top_p` → `topP`,
 *   `max_completion_tokens` or `max_tokens` → `maxOutputTokens`, `stop` →
 *   `stopSequences`, `n` → `candidateCount`, `seed`, `presence_penalty`,
 *   `frequency_penalty`, `response_format` (`json_object` →
 *   `responseMimeType: application/json`, `json_schema` → that and
 *   `responseJsonSchema`);
 * - `tools` (function tools) → one `functionDeclarations` tool, each
 *   `parameters` as `parametersJsonSchema` (JSON Schema as OpenAI's callers
 *   write it, not the OpenAPI subset `parameters` takes); `tool_choice` →
 *   `toolConfig.functionCallingConfig` (`auto` AUTO, `none` NONE,
 *   `required` ANY, a named function ANY with `allowedFunctionNames`);
 * - an OpenAI parameter Gemini cannot honour (`logit_bias`, `logprobs`,
 *   `parallel_tool_calls: false`, audio output, …) is 400
 *   `unsupported_parameter` naming it, or dropped with `drop_params`; a
 *   field that is no OpenAI parameter is not sent.
 * The model and `stream` go into the URL (index.ts), not the body.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { isRecord } from '../compatible.js';
import { thoughtSignatureOf } from './tool-call-id.js';

export interface RequestOptions {
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
}

type Part = Record<string, unknown>;
interface Turn {
  readonly role: 'user' | 'model';
  readonly parts: Part[];
}
type Refuse = (param: string, why: string) => void;

/** OpenAI parameters Gemini has no equivalent for, each with the values that ask for nothing (so `logprobs: false` passes). */
const REFUSED: Readonly<Record<string, (value: unknown) => boolean>> = {
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
  // Gemini decides alone how many calls a turn makes.
  parallel_tool_calls: (v) => v === true,
};

/** Sampling parameters with a GenerationConfig field of their own. */
const SAMPLING: ReadonlyArray<readonly [string, string]> = [
  ['temperature', 'temperature'],
  ['top_p', 'topP'],
  ['seed', 'seed'],
  ['presence_penalty', 'presencePenalty'],
  ['frequency_penalty', 'frequencyPenalty'],
];

export function toGenerateContentRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse: Refuse = (param, why) => {
    if (!options.dropParams) throw new GatewayError('unsupported_parameter', `${param}: ${why} (set drop_params: true to drop it)`);
  };
  for (const param of Object.keys(REFUSED)) {
    const value = body[param];
    if (value !== undefined && value !== null && !(REFUSED[param] as (v: unknown) => boolean)(value)) refuse(param, 'the gemini provider has no equivalent');
  }

  const { system, turns } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { contents: turns };
  if (system.length > 0) out.systemInstruction = { parts: system };
  const tools = declarations(body.tools, refuse);
  if (tools.length > 0) {
    out.tools = [{ functionDeclarations: tools }];
    const config = callingConfig(body.tool_choice);
    if (config !== null) out.toolConfig = { functionCallingConfig: config };
  }
  const generation = generationConfig(body, refuse);
  if (Object.keys(generation).length > 0) out.generationConfig = generation;
  return out;
}

function generationConfig(body: Readonly<Record<string, unknown>>, refuse: Refuse): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [from, to] of SAMPLING) if (typeof body[from] === 'number') out[to] = body[from];
  const max = body.max_completion_tokens ?? body.max_tokens;
  if (typeof max === 'number') out.maxOutputTokens = max;
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  const stops = stop.filter((s): s is string => typeof s === 'string' && s.length > 0);
  if (stops.length > 0) out.stopSequences = stops;
  if (typeof body.n === 'number' && body.n !== 1) out.candidateCount = body.n;
  const format = body.response_format;
  if (isRecord(format) && format.type !== 'text') {
    if (format.type === 'json_object' || format.type === 'json_schema') out.responseMimeType = 'application/json';
    else refuse('response_format.type', `"${String(format.type)}" has no equivalent`);
    if (format.type === 'json_schema' && isRecord(format.json_schema) && isRecord(format.json_schema.schema)) out.responseJsonSchema = format.json_schema.schema;
  }
  return out;
}

function conversation(messages: unknown, refuse: Refuse): { system: Part[]; turns: Turn[] } {
  const system: Part[] = [];
  const turns: Turn[] = [];
  // Gemini names the function a result answers; the compatible format names only the call's id.
  const names = new Map<string, string>();
  const push = (role: Turn['role'], parts: Part[]) => {
    if (parts.length === 0) return;
    const last = turns[turns.length - 1];
    if (last !== undefined && last.role === role) last.parts.push(...parts);
    else turns.push({ role, parts });
  };
  (messages as readonly unknown[]).forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(message)) throw new GatewayError('invalid_request', `${at}: must be an object`);
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...contentParts(message.content, `${at}.content`, false, refuse));
        break;
      case 'user':
        push('user', contentParts(message.content, `${at}.content`, true, refuse));
        break;
      case 'assistant':
        push('model', [...contentParts(message.content, `${at}.content`, false, refuse), ...functionCalls(message.tool_calls, at, names)]);
        break;
      case 'tool':
        push('user', [functionResponse(message, at, names, refuse)]);
        break;
      default:
        // `function` (the deprecated form of `tool`) included.
        refuse(`${at}.role`, `role "${String(message.role)}" has no equivalent`);
    }
  });
  return { system, turns };
}

/** Text (and, in user turns, media) parts of a message's content; blank text is left out. */
function contentParts(content: unknown, at: string, media: boolean, refuse: Refuse): Part[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return textPart(content);
  if (!Array.isArray(content)) throw new GatewayError('invalid_request', `${at}: must be a string or an array of content parts`);
  const parts: Part[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) throw new GatewayError('invalid_request', `${where}: must be an object`);
    if (part.type === 'text') parts.push(...textPart(typeof part.text === 'string' ? part.text : ''));
    // An assistant's refusal part was its text.
    else if (part.type === 'refusal') parts.push(...textPart(typeof part.refusal === 'string' ? part.refusal : ''));
    else if (media && part.type === 'image_url') parts.push(imagePart(part.image_url, `${where}.image_url`));
    else if (media && part.type === 'input_audio') parts.push(audioPart(part.input_audio, `${where}.input_audio`));
    else if (media && part.type === 'file' && isRecord(part.file) && typeof part.file.file_data === 'string') parts.push(dataPart(part.file.file_data, `${where}.file.file_data`));
    else refuse(`${where}.type`, `content part "${String(part.type)}" has no equivalent here`);
  });
  return parts;
}

/** Gemini answers an empty text part with 400; a blank one says nothing. */
const textPart = (text: string): Part[] => (text.trim().length > 0 ? [{ text }] : []);

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function dataPart(url: string, at: string): Part {
  const data = DATA_URL.exec(url);
  if (data === null) throw new GatewayError('invalid_request', `${at}: must be a base64 data URL`);
  return { inlineData: { mimeType: data[1], data: data[2] } };
}

function imagePart(image: unknown, at: string): Part {
  const url = isRecord(image) ? image.url : undefined;
  if (typeof url !== 'string' || url.length === 0) throw new GatewayError('invalid_request', `${at}.url: must be a URL`);
  // Gemini fetches an http(s) URL itself (fileData); `detail` has no equivalent and asks for nothing Gemini must refuse.
  if (/^https?:\/\//i.test(url)) return { fileData: { fileUri: url } };
  if (!url.startsWith('data:')) throw new GatewayError('invalid_request', `${at}.url: must be an http(s) or base64 data URL`);
  return dataPart(url, `${at}.url`);
}

const AUDIO_TYPES: Readonly<Record<string, string>> = { wav: 'audio/wav', mp3: 'audio/mp3' };

function audioPart(audio: unknown, at: string): Part {
  const mimeType = isRecord(audio) && typeof audio.format === 'string' ? AUDIO_TYPES[audio.format] : undefined;
  if (!isRecord(audio) || typeof audio.data !== 'string' || mimeType === undefined) throw new GatewayError('invalid_request', `${at}: must have base64 data and a format of wav or mp3`);
  return { inlineData: { mimeType, data: audio.data } };
}

function functionCalls(calls: unknown, at: string, names: Map<string, string>): Part[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new GatewayError('invalid_request', `${at}.tool_calls: must be an array`);
  return calls.map((call, j) => {
    const where = `${at}.tool_calls[${j}]`;
    const fn = isRecord(call) ? call.function : undefined;
    if (!isRecord(call) || typeof call.id !== 'string' || !isRecord(fn) || typeof fn.name !== 'string') {
      throw new GatewayError('invalid_request', `${where}: must have an id and a function with a name`);
    }
    names.set(call.id, fn.name);
    const part: Part = { functionCall: { name: fn.name, args: functionArgs(fn.arguments, `${where}.function.arguments`) } };
    const signature = thoughtSignatureOf(call.id);
    if (signature !== null) part.thoughtSignature = signature;
    return part;
  });
}

/** Arguments are a JSON string in OpenAI's format and an object in Gemini's; an empty string is no arguments. */
function functionArgs(args: unknown, at: string): Record<string, unknown> {
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

/** A tool result: Gemini's `functionResponse`, its text under `output` (the key the API reference names for a function's output). */
function functionResponse(message: Record<string, unknown>, at: string, names: ReadonlyMap<string, string>, refuse: Refuse): Part {
  const id = message.tool_call_id;
  if (typeof id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
  const name = names.get(id);
  if (name === undefined) throw new GatewayError('invalid_request', `${at}.tool_call_id: no assistant tool call before it has the id "${id}"`);
  const text = typeof message.content === 'string' ? message.content : contentParts(message.content, `${at}.content`, false, refuse).map((p) => p.text).join('');
  return { functionResponse: { name, response: { output: text } } };
}

function declarations(tools: unknown, refuse: Refuse): Part[] {
  if (!Array.isArray(tools)) return [];
  const out: Part[] = [];
  tools.forEach((tool, i) => {
    const fn = isRecord(tool) ? tool.function : undefined;
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(fn) || typeof fn.name !== 'string') {
      refuse(`tools[${i}].type`, 'only function tools have an equivalent');
      return;
    }
    const declaration: Part = { name: fn.name };
    if (typeof fn.description === 'string') declaration.description = fn.description;
    if (isRecord(fn.parameters)) declaration.parametersJsonSchema = fn.parameters;
    out.push(declaration);
  });
  return out;
}

function callingConfig(choice: unknown): Part | null {
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  return null;
}
