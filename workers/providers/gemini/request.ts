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
 * - a Messages call's `thinking` (ProviderCall.thinking) → `thinkingConfig`
 *   (thinkingConfig below); `reasoning_effort` stays refused (PROVIDERS.md);
 * - an OpenAI parameter Gemini cannot honour (`logit_bias`, `logprobs`,
 *   `parallel_tool_calls: false`, audio output, …) is 400
 *   `unsupported_parameter` naming it, or dropped with `drop_params`; a
 *   field that is no OpenAI parameter is not sent.
 * The model and `stream` go into the URL (index.ts), not the body.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { contentParts, DATA_URL, eachMessage, functionTools, OPENAI_ONLY, refuser, refuseUnsupported, stopSequences, textOnly, toolCalls, Turns, type NoEquivalent, type Refuse } from '../chat-request.js';
import { showsThinking, type Thinking } from '../adapter.js';
import { isRecord } from '../compatible.js';
import { thoughtSignatureOf } from './tool-call-id.js';

export interface RequestOptions {
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
  /** ProviderCall.droppable: parameters dropped rather than refused whatever `dropParams` says. */
  readonly droppable?: ReadonlySet<string>;
  /** ProviderCall.thinking: a Messages call's `thinking`, as `generationConfig.thinkingConfig`. */
  readonly thinking?: Thinking;
}

type Part = Record<string, unknown>;

/** OpenAI parameters Gemini has no equivalent for, each with the values that ask for nothing (so `logprobs: false` passes). */
const REFUSED: NoEquivalent = {
  ...OPENAI_ONLY,
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
  const refuse = refuser(options.dropParams, options.droppable);
  refuseUnsupported(body, REFUSED, 'gemini', refuse);

  const { system, turns } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { contents: turns };
  if (system.length > 0) out.systemInstruction = { parts: system };
  const tools = functionTools(body.tools, refuse).map((t) => ({
    name: t.name,
    ...(t.description === undefined ? {} : { description: t.description }),
    ...(t.parameters === undefined ? {} : { parametersJsonSchema: t.parameters }),
  }));
  if (tools.length > 0) {
    out.tools = [{ functionDeclarations: tools }];
    const config = callingConfig(body.tool_choice);
    if (config !== null) out.toolConfig = { functionCallingConfig: config };
  }
  const generation = generationConfig(body, refuse);
  const thinking = options.thinking === undefined ? null : thinkingConfig(options.thinking);
  if (thinking !== null) generation.thinkingConfig = thinking;
  if (Object.keys(generation).length > 0) out.generationConfig = generation;
  return out;
}

function generationConfig(body: Readonly<Record<string, unknown>>, refuse: Refuse): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [from, to] of SAMPLING) if (typeof body[from] === 'number') out[to] = body[from];
  const max = body.max_completion_tokens ?? body.max_tokens;
  if (typeof max === 'number') out.maxOutputTokens = max;
  const stop = stopSequences(body.stop);
  if (stop !== null) out.stopSequences = stop;
  if (typeof body.n === 'number' && body.n !== 1) out.candidateCount = body.n;
  const format = body.response_format;
  if (isRecord(format) && format.type !== 'text') {
    if (format.type === 'json_object' || format.type === 'json_schema') out.responseMimeType = 'application/json';
    else refuse('response_format.type', `"${String(format.type)}" has no equivalent`);
    if (format.type === 'json_schema' && isRecord(format.json_schema) && isRecord(format.json_schema.schema)) out.responseJsonSchema = format.json_schema.schema;
  }
  return out;
}

/**
 * The budgets every Gemini model with a `thinkingBudget` takes (Gemini's thinking guide: 2.5 Pro
 * 128–32768, 2.5 Flash 0–24576, 2.5 Flash-Lite 512–24576; Gemini 3 takes the budget for backwards
 * compatibility): a budget outside a model's range is a 400 ("The thinking budget (N) is
 * invalid"), and Anthropic-only fields are never an error (CONTRACT.md), so the budget is clamped
 * into the range they share. The floor is Anthropic's own minimum, 1024, above every model's.
 */
export const THINKING_BUDGET_MIN = 1024;
export const THINKING_BUDGET_MAX = 24576;

/**
 * Anthropic's `thinking` as Gemini's `thinkingConfig` (docs/PROVIDERS.md, "Anthropic Messages
 * inbound: mapping", Thinking): a budget → `thinkingBudget` (clamped, above); adaptive → the
 * model's own dynamic thinking (no budget); `includeThoughts` when the text is to be shown (the
 * thought parts become `reasoning_content`, response.ts). Disabled → nothing: 2.5 Pro and Gemini 3
 * cannot stop thinking and refuse `thinkingBudget: 0`.
 */
function thinkingConfig(thinking: Thinking): Record<string, unknown> | null {
  if (thinking.type === 'disabled') return null;
  const out: Record<string, unknown> = {};
  if (thinking.type === 'budget') out.thinkingBudget = Math.min(THINKING_BUDGET_MAX, Math.max(THINKING_BUDGET_MIN, thinking.budgetTokens));
  if (showsThinking(thinking)) out.includeThoughts = true;
  return Object.keys(out).length > 0 ? out : null;
}

function conversation(messages: unknown, refuse: Refuse): { system: Part[]; turns: Array<{ role: 'user' | 'model'; parts: Part[] }> } {
  const system: Part[] = [];
  const turns = new Turns<'user' | 'model', Part>();
  // Gemini names the function a result answers; the compatible format names only the call's id.
  const names = new Map<string, string>();
  eachMessage(
    messages,
    {
      system: (m, at) => system.push(...contentParts(m.content, `${at}.content`, textPart, textOnly, refuse)),
      user: (m, at) => turns.push('user', contentParts(m.content, `${at}.content`, textPart, mediaPart, refuse)),
      assistant: (m, at) =>
        turns.push('model', [
          ...contentParts(m.content, `${at}.content`, textPart, textOnly, refuse),
          ...toolCalls(m.tool_calls, at).map((call) => {
            names.set(call.id, call.name);
            const part: Part = { functionCall: { name: call.name, args: call.args } };
            const signature = thoughtSignatureOf(call.id);
            if (signature !== null) part.thoughtSignature = signature;
            return part;
          }),
        ]),
      tool: (m, at) => turns.push('user', [functionResponse(m, at, names, refuse)]),
    },
    refuse,
  );
  return { system, turns: turns.list.map((turn) => ({ role: turn.role, parts: turn.blocks })) };
}

/** Gemini answers an empty text part with 400; a blank one says nothing. */
const textPart = (text: string): Part[] => (text.trim().length > 0 ? [{ text }] : []);

/** A user's media part: images, audio and files; null for a part without an equivalent. */
function mediaPart(part: Record<string, unknown>, at: string): Part | null {
  if (part.type === 'image_url') return imagePart(part.image_url, `${at}.image_url`);
  if (part.type === 'input_audio') return audioPart(part.input_audio, `${at}.input_audio`);
  if (part.type === 'file' && isRecord(part.file) && typeof part.file.file_data === 'string') return dataPart(part.file.file_data, `${at}.file.file_data`);
  return null;
}

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

/** A tool result: Gemini's `functionResponse`, its text under `output` (the key the API reference names for a function's output). */
function functionResponse(message: Record<string, unknown>, at: string, names: ReadonlyMap<string, string>, refuse: Refuse): Part {
  const id = message.tool_call_id;
  if (typeof id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
  const name = names.get(id);
  if (name === undefined) throw new GatewayError('invalid_request', `${at}.tool_call_id: no assistant tool call before it has the id "${id}"`);
  const text = typeof message.content === 'string' ? message.content : contentParts(message.content, `${at}.content`, textPart, textOnly, refuse).map((p) => p.text).join('');
  return { functionResponse: { name, response: { output: text } } };
}

function callingConfig(choice: unknown): Part | null {
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  return null;
}
