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
import { DATA_URL, JSON_TOOL, JSON_TOOL_DESCRIPTION, chatTurns, contentBlocks, isBlank, jsonSchemaOf, maxTokensOf, refuseUnhonoured, refuser, stopSequences, functionTools, type BlockMaker, type Refuse } from '../chat-request.js';

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

export function toMessagesRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse = refuser(options.dropParams);
  refuseUnhonoured(body, 'anthropic', refuse);

  const { system, turns } = chatTurns(body.messages, blockMaker(refuse), refuse);
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

function imageBlock(image: unknown, at: string): Block | null {
  const url = isRecord(image) ? image.url : undefined;
  if (typeof url !== 'string' || url.length === 0) throw new GatewayError('invalid_request', `${at}.url: must be a URL`);
  const data = DATA_URL.exec(url);
  if (data !== null) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new GatewayError('invalid_request', `${at}.url: must be an http(s) or base64 data URL`);
}

/** Anthropic's blocks; text is never blank here (chatTurns leaves blank text out, as Anthropic refuses it). */
function blockMaker(refuse: Refuse): BlockMaker<Block> {
  const make: BlockMaker<Block> = {
    text: (text) => ({ type: 'text', text }),
    image: (image, at) => imageBlock(image, at),
    toolUse: ({ id, name, input }) => ({ type: 'tool_use', id, name, input }),
    toolResult(toolCallId, content, at) {
      // A string result as it is, parts as text blocks; none when blank.
      const block: Block = { type: 'tool_result', tool_use_id: toolCallId };
      const kept = typeof content === 'string' ? (isBlank(content) ? null : content) : contentBlocks(content, `${at}.content`, false, make, refuse);
      if (kept !== null && kept.length > 0) block.content = kept;
      return block;
    },
  };
  return make;
}

function toolsOf(tools: unknown, refuse: Refuse): Block[] {
  return functionTools(tools, refuse).map(({ name, description, parameters }) => ({ name, ...(description === null ? {} : { description }), input_schema: parameters }));
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
