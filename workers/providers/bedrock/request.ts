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
import { isRecord } from '../compatible.js';
import { DATA_URL, JSON_TOOL, JSON_TOOL_DESCRIPTION, isBlank, jsonSchemaOf, maxTokensOf, refuseUnhonoured, refuser, stopSequences, toolArguments, toolCallOf, type Refuse } from '../chat-request.js';

export interface RequestOptions {
  /** `drop_params`: drop what would be refused. */
  readonly dropParams: boolean;
}

type Block = Record<string, unknown>;
interface Turn {
  readonly role: 'user' | 'assistant';
  readonly content: Block[];
}

/** Converse's image formats, by media type. */
const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

export function toConverseRequest(body: Readonly<Record<string, unknown>>, options: RequestOptions): Record<string, unknown> {
  const refuse = refuser(options.dropParams);
  refuseUnhonoured(body, 'bedrock', refuse);
  if (body.parallel_tool_calls === false) refuse('parallel_tool_calls', 'Converse cannot keep a model to one tool call');

  const { system, turns, toolBlocks, toolNames } = conversation(body.messages, refuse);
  const out: Record<string, unknown> = { messages: turns };
  if (system.length > 0) out.system = system;
  const inference = inferenceConfig(body);
  if (inference !== null) out.inferenceConfig = inference;
  const tools = toolsOf(body.tools, refuse);
  const json = jsonSchemaOf(body.response_format, tools.length > 0, refuse);
  if (json !== null) {
    out.toolConfig = { tools: [{ toolSpec: { name: JSON_TOOL, description: JSON_TOOL_DESCRIPTION, inputSchema: { json } } }], toolChoice: { tool: { name: JSON_TOOL } } };
  } else if (tools.length > 0) {
    const choice = toolChoice(body.tool_choice, toolBlocks, refuse);
    if (choice !== NONE) out.toolConfig = choice === null ? { tools } : { tools, toolChoice: choice };
  }
  // Converse refuses tool blocks without a toolConfig: the tools the conversation used are declared, with an open schema.
  if (toolBlocks && out.toolConfig === undefined) out.toolConfig = { tools: [...toolNames].map((name) => ({ toolSpec: { name, inputSchema: { json: { type: 'object' } } } })) };
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

function conversation(messages: unknown, refuse: Refuse): { system: Block[]; turns: Turn[]; toolBlocks: boolean; toolNames: Set<string> } {
  const system: Block[] = [];
  const turns: Turn[] = [];
  const toolNames = new Set<string>();
  let toolBlocks = false;
  const push = (role: Turn['role'], blocks: Block[]) => {
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
        system.push(...contentBlocks(message.content, `${at}.content`, false, refuse));
        break;
      case 'user':
        push('user', contentBlocks(message.content, `${at}.content`, true, refuse));
        break;
      case 'assistant': {
        const uses = toolUses(message.tool_calls, at);
        for (const use of uses) toolNames.add((use.toolUse as { name: string }).name);
        toolBlocks ||= uses.length > 0;
        push('assistant', [...contentBlocks(message.content, `${at}.content`, false, refuse), ...uses]);
        break;
      }
      case 'tool':
        toolBlocks = true;
        push('user', [toolResult(message, at, refuse)]);
        break;
      default:
        // `function` (the deprecated form of `tool`) included.
        refuse(`${at}.role`, `role "${String(message.role)}" has no equivalent`);
    }
  });
  return { system, turns, toolBlocks, toolNames };
}

/** Text (and, in user turns, image) blocks of a message's content; blank text is left out. */
function contentBlocks(content: unknown, at: string, images: boolean, refuse: Refuse): Block[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return textBlock(content);
  if (!Array.isArray(content)) throw new GatewayError('invalid_request', `${at}: must be a string or an array of content parts`);
  const blocks: Block[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (!isRecord(part)) throw new GatewayError('invalid_request', `${where}: must be an object`);
    if (part.type === 'text') blocks.push(...textBlock(typeof part.text === 'string' ? part.text : ''));
    // An assistant's refusal part was its text.
    else if (part.type === 'refusal') blocks.push(...textBlock(typeof part.refusal === 'string' ? part.refusal : ''));
    else if (part.type === 'image_url' && images) {
      const image = imageBlock(part.image_url, `${where}.image_url`, refuse);
      if (image !== null) blocks.push(image);
    } else refuse(`${where}.type`, `content part "${String(part.type)}" has no equivalent here`);
  });
  return blocks;
}

/** Converse refuses text blocks that are empty or only whitespace. */
const textBlock = (text: string): Block[] => (isBlank(text) ? [] : [{ text }]);

/** A base64 data URL as an image block; Converse reads no URL (only bytes, or S3), so an http(s) one is refused. */
function imageBlock(image: unknown, at: string, refuse: Refuse): Block | null {
  const url = isRecord(image) ? image.url : undefined;
  if (typeof url !== 'string' || url.length === 0) throw new GatewayError('invalid_request', `${at}.url: must be a URL`);
  const data = DATA_URL.exec(url);
  if (data === null) {
    refuse(`${at}.url`, 'Converse takes images as base64 data URLs only, not by URL');
    return null;
  }
  const format = IMAGE_FORMATS[(data[1] as string).toLowerCase()];
  if (format === undefined) {
    refuse(`${at}.url`, `Converse takes png, jpeg, gif and webp images, not ${String(data[1])}`);
    return null;
  }
  return { image: { format, source: { bytes: data[2] } } };
}

function toolUses(calls: unknown, at: string): Block[] {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) throw new GatewayError('invalid_request', `${at}.tool_calls: must be an array`);
  return calls.map((call, j) => {
    const where = `${at}.tool_calls[${j}]`;
    const { id, name, arguments: args } = toolCallOf(call, where);
    return { toolUse: { toolUseId: id, name, input: toolArguments(args, `${where}.function.arguments`) } };
  });
}

/** A `tool` message as a toolResult block: its text as text blocks (none when blank: Converse takes an empty content list, not a blank block). */
function toolResult(message: Record<string, unknown>, at: string, refuse: Refuse): Block {
  if (typeof message.tool_call_id !== 'string') throw new GatewayError('invalid_request', `${at}.tool_call_id: must be a string`);
  return { toolResult: { toolUseId: message.tool_call_id, content: contentBlocks(message.content, `${at}.content`, false, refuse) } };
}

function toolsOf(tools: unknown, refuse: Refuse): Block[] {
  if (!Array.isArray(tools)) return [];
  const out: Block[] = [];
  tools.forEach((tool, i) => {
    const fn = isRecord(tool) ? tool.function : undefined;
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(fn) || typeof fn.name !== 'string') {
      refuse(`tools[${i}].type`, `only function tools have an equivalent`);
      return;
    }
    const spec: Block = { name: fn.name };
    if (typeof fn.description === 'string' && fn.description.length > 0) spec.description = fn.description;
    spec.inputSchema = { json: isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} } };
    out.push({ toolSpec: spec });
  });
  return out;
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
