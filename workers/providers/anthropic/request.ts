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
import { contentParts, DATA_URL, eachMessage, functionTools, JSON_TOOL, JSON_TOOL_DESCRIPTION, jsonSchemaOf, maxTokensOf, NO_SAMPLING_CONTROLS, OPENAI_ONLY, refuser, refuseUnsupported, stopSequences, textOnly, toolCalls, Turns, type NoEquivalent, type Refuse } from '../chat-request.js';
import { isRecord } from '../compatible.js';

export interface RequestOptions {
  /** The upstream model id. */
  readonly model: string;
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
  /** ProviderCall.droppable: parameters dropped rather than refused whatever `dropParams` says. */
  readonly droppable?: ReadonlySet<string>;
}

export { JSON_TOOL };

/** Anthropic requires max_tokens; OpenAI's callers often send none. */
export const DEFAULT_MAX_TOKENS = 4096;

type Block = Record<string, unknown>;

/** OpenAI parameters Anthropic has no equivalent for, each with the values that ask for nothing. */
const REFUSED: NoEquivalent = {
  ...NO_SAMPLING_CONTROLS,
  ...OPENAI_ONLY,
};

export function toMessagesRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse = refuser(options.dropParams, options.droppable);
  refuseUnsupported(body, REFUSED, 'anthropic', refuse);

  const { system, turns } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { model: options.model, max_tokens: maxTokens(body) };
  if (system.length > 0) out.system = system;
  out.messages = turns;
  const stop = stopSequences(body.stop);
  if (stop !== null) out.stop_sequences = stop;
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (typeof body.user === 'string' && body.user.length > 0) out.metadata = { user_id: body.user };
  const tools = functionTools(body.tools, refuse).map((t) => ({ name: t.name, ...(t.description === undefined ? {} : { description: t.description }), input_schema: t.parameters ?? { type: 'object', properties: {} } }));
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

function maxTokens(body: Readonly<Record<string, unknown>>): number {
  return maxTokensOf(body) ?? DEFAULT_MAX_TOKENS;
}

function conversation(messages: unknown, refuse: Refuse): { system: Block[]; turns: Array<{ role: 'user' | 'assistant'; content: Block[] }> } {
  const system: Block[] = [];
  const turns = new Turns<'user' | 'assistant', Block>();
  eachMessage(
    messages,
    {
      system: (m, at) => system.push(...contentParts(m.content, `${at}.content`, textBlock, textOnly, refuse)),
      user: (m, at) => turns.push('user', contentParts(m.content, `${at}.content`, textBlock, (part, where) => (part.type === 'image_url' ? imageBlock(part.image_url, `${where}.image_url`) : null), refuse)),
      assistant: (m, at) =>
        turns.push('assistant', [
          ...contentParts(m.content, `${at}.content`, textBlock, textOnly, refuse),
          ...toolCalls(m.tool_calls, at).map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.args })),
        ]),
      tool: (m, at) => turns.push('user', [toolResult(m, at, refuse)]),
    },
    refuse,
  );
  return { system, turns: turns.list.map((turn) => ({ role: turn.role, content: turn.blocks })) };
}

/** Anthropic refuses text blocks that are empty or only whitespace. */
const textBlock = (text: string): Block[] => (text.trim().length > 0 ? [{ type: 'text', text }] : []);

function imageBlock(image: unknown, at: string): Block {
  const url = isRecord(image) ? image.url : undefined;
  if (typeof url !== 'string' || url.length === 0) throw new GatewayError('invalid_request', `${at}.url: must be a URL`);
  const data = DATA_URL.exec(url);
  if (data !== null) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new GatewayError('invalid_request', `${at}.url: must be an http(s) or base64 data URL`);
}

function toolResult(message: Record<string, unknown>, at: string, refuse: Refuse): Block {
  if (typeof message.tool_call_id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
  const block: Block = { type: 'tool_result', tool_use_id: message.tool_call_id };
  const content = typeof message.content === 'string' ? (message.content.trim().length > 0 ? message.content : null) : contentParts(message.content, `${at}.content`, textBlock, textOnly, refuse);
  if (content !== null && content.length > 0) block.content = content;
  return block;
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
