/**
 * A chat completions request as a Bedrock Converse request (pure; the
 * golden files in bedrock/golden/ are its examples). CONTRACT.md, Native
 * providers; where the contract is silent, the Converse API reference and
 * what the AWS SDK sends:
 * - `system` and `developer` messages, wherever they are, become `system`
 *   text blocks, in order;
 * - user and assistant turns keep their order; consecutive turns of one
 *   role are merged, so the `tool` results that follow an assistant turn
 *   are `toolResult` blocks of one user turn, before any user text that
 *   comes next; assistant `tool_calls` become `toolUse` blocks (arguments
 *   parsed); images given as base64 data URLs become `image` blocks
 *   (Converse takes no image URL). No blank text block is sent, so an
 *   assistant turn of only tool calls has none;
 * - `max_completion_tokens` or `max_tokens`, `temperature`, `top_p`, `stop`
 *   → `inferenceConfig` (`maxTokens`, `temperature`, `topP`,
 *   `stopSequences`); nothing is sent for what the caller left out;
 * - `tools` → `toolConfig.tools[].toolSpec` (`inputSchema.json` =
 *   `parameters`); `tool_choice` `auto` / `required` / a named function →
 *   `{auto}` / `{any}` / `{tool: {name}}`; `none` → no `toolConfig` at all
 *   (Converse has no `none`), which Converse refuses once the conversation
 *   holds tool blocks, so there it is refused (or, with `drop_params`,
 *   sent as `auto`); a conversation with tool calls but no `tools` (which
 *   Converse refuses) declares the tools it used, with an open schema;
 * - `response_format` `json_schema` / `json_object`: a forced tool whose
 *   input is the answer, as for Anthropic (Converse has no JSON mode);
 * - an OpenAI parameter Converse cannot honour (`n` > 1, `logit_bias`,
 *   `logprobs`, penalties, `seed`, `parallel_tool_calls: false`, …) is 400
 *   `unsupported_parameter` naming it, or dropped with `drop_params`; `user`,
 *   `metadata` and `messages[].name` are dropped (they change no answer);
 *   a field that is no OpenAI parameter is not sent.
 */
import { GatewayError } from '../../../protocol/errors.js';
import {
  contentParts,
  DATA_URL,
  eachMessage,
  functionTools,
  JSON_TOOL,
  JSON_TOOL_DESCRIPTION,
  jsonSchemaOf,
  maxTokensOf,
  NO_SAMPLING_CONTROLS,
  OPENAI_ONLY,
  refuser,
  refuseUnsupported,
  stopSequences,
  textOnly,
  toolCalls,
  Turns,
  type NoEquivalent,
  type Refuse,
} from '../chat-request.js';
import { isRecord } from '../compatible.js';

export interface RequestOptions {
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
  /** ProviderCall.droppable: parameters dropped rather than refused whatever `dropParams` says. */
  readonly droppable?: ReadonlySet<string>;
}

type Block = Record<string, unknown>;

/** OpenAI parameters Converse has no equivalent for, each with the values that ask for nothing. */
const REFUSED: NoEquivalent = {
  ...NO_SAMPLING_CONTROLS,
  parallel_tool_calls: (v) => v !== false,
  ...OPENAI_ONLY,
};

/** Converse's image formats, by media type. */
const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

export function toConverseRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse = refuser(options.dropParams, options.droppable);
  refuseUnsupported(body, REFUSED, 'bedrock', refuse);

  const { system, turns, toolNames } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { messages: turns };
  if (system.length > 0) out.system = system;
  const inference = inferenceConfig(body);
  if (inference !== null) out.inferenceConfig = inference;
  const tools = functionTools(body.tools, refuse).map((t) => ({ toolSpec: { name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: { json: t.parameters ?? { type: 'object', properties: {} } } } }));
  const json = jsonSchemaOf(body.response_format, tools.length > 0, refuse);
  const toolBlocks = toolNames !== null;
  if (json !== null) {
    out.toolConfig = { tools: [{ toolSpec: { name: JSON_TOOL, description: JSON_TOOL_DESCRIPTION, inputSchema: { json } } }], toolChoice: { tool: { name: JSON_TOOL } } };
  } else if (tools.length > 0) {
    const choice = toolChoice(body.tool_choice, toolBlocks, refuse);
    if (choice !== NONE) out.toolConfig = choice === null ? { tools } : { tools, toolChoice: choice };
  }
  // Converse refuses tool blocks without a toolConfig: the tools the conversation used are declared, with an open schema.
  if (toolNames !== null && out.toolConfig === undefined) out.toolConfig = { tools: [...toolNames].map((name) => ({ toolSpec: { name, inputSchema: { json: { type: 'object' } } } })) };
  return out;
}

function inferenceConfig(body: Readonly<Record<string, unknown>>): Block | null {
  const config: Block = {};
  const max = maxTokensOf(body);
  if (max !== null) config.maxTokens = max;
  if (typeof body.temperature === 'number') config.temperature = body.temperature;
  if (typeof body.top_p === 'number') config.topP = body.top_p;
  const stop = stopSequences(body.stop);
  if (stop !== null) config.stopSequences = stop;
  return Object.keys(config).length > 0 ? config : null;
}

/** The turns; `toolNames`: the tools the conversation's assistant turns called, null when it holds no tool block at all. */
function conversation(messages: unknown, refuse: Refuse): { system: Block[]; turns: Array<{ role: 'user' | 'assistant'; content: Block[] }>; toolNames: Set<string> | null } {
  const system: Block[] = [];
  const turns = new Turns<'user' | 'assistant', Block>();
  let toolNames: Set<string> | null = null;
  const image = (part: Record<string, unknown>, where: string) => (part.type === 'image_url' ? imageBlock(part.image_url, `${where}.image_url`, refuse) : null);
  eachMessage(
    messages,
    {
      system: (m, at) => system.push(...contentParts(m.content, `${at}.content`, textBlock, textOnly, refuse)),
      user: (m, at) => turns.push('user', contentParts(m.content, `${at}.content`, textBlock, image, refuse)),
      assistant: (m, at) => {
        const calls = toolCalls(m.tool_calls, at);
        for (const call of calls) (toolNames ??= new Set()).add(call.name);
        turns.push('assistant', [...contentParts(m.content, `${at}.content`, textBlock, textOnly, refuse), ...calls.map((call) => ({ toolUse: { toolUseId: call.id, name: call.name, input: call.args } }))]);
      },
      tool: (m, at) => {
        if (typeof m.tool_call_id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
        toolNames ??= new Set();
        // Its text as text blocks; none when blank: Converse takes an empty content list, not a blank block.
        turns.push('user', [{ toolResult: { toolUseId: m.tool_call_id, content: contentParts(m.content, `${at}.content`, textBlock, textOnly, refuse) } }]);
      },
    },
    refuse,
  );
  return { system, turns: turns.list.map((turn) => ({ role: turn.role, content: turn.blocks })), toolNames };
}

/** Converse refuses text blocks that are empty or only whitespace. */
const textBlock = (text: string): Block[] => (text.trim().length > 0 ? [{ text }] : []);

/** A base64 data URL as an image block; Converse reads no URL (only bytes, or S3), so an http(s) one is refused (dropped with drop_params). */
function imageBlock(image: unknown, at: string, refuse: Refuse): Block | null {
  const url = isRecord(image) ? image.url : undefined;
  if (typeof url !== 'string' || url.length === 0) throw new GatewayError('invalid_request', `${at}.url: must be a URL`);
  const data = DATA_URL.exec(url);
  const format = data === null ? undefined : IMAGE_FORMATS[(data[1] as string).toLowerCase()];
  if (data === null || format === undefined) {
    refuse(`${at}.url`, data === null ? 'Converse takes images as base64 data URLs only, not by URL' : `Converse takes png, jpeg, gif and webp images, not ${String(data[1])}`);
    // Dropped (drop_params): contentParts's own refusal of a null part is then a no-op too.
    return null;
  }
  return { image: { format, source: { bytes: data[2] } } };
}

/** `tool_choice: none`: no toolConfig. */
const NONE = 'none';

/** Converse's toolChoice; null for its default (auto); NONE for no toolConfig. */
function toolChoice(choice: unknown, toolBlocks: boolean, refuse: Refuse): Block | null | typeof NONE {
  if (choice === 'required') return { any: {} };
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') return { tool: { name: choice.function.name } };
  if (choice === 'none') {
    // Converse needs toolConfig while the conversation holds toolUse or toolResult blocks.
    if (!toolBlocks) return NONE;
    refuse('tool_choice', '"none" has no equivalent in Converse once the conversation has tool calls');
    return null;
  }
  return choice === 'auto' ? { auto: {} } : null;
}
