/**
 * The ids a translated Messages call emits (CONTRACT.md, Anthropic Messages
 * API (inbound): tool-use ids match `^[a-zA-Z0-9_-]+$` and map back to the
 * provider's own id). Anthropic refuses any other `tool_use.id` or
 * `tool_result.tool_use_id` on the next turn, and Claude Code and the SDKs
 * send the id back verbatim, so the provider's id must survive inside it:
 *
 * - a provider id that already matches the pattern (OpenAI's `call_…`,
 *   Bedrock's `tooluse_…`) is used as it is;
 * - any other (Gemini's `<id>__thought__<signature>`, whose signature is
 *   standard base64 with `+`, `/` and `=`: providers/gemini/tool-call-id.ts;
 *   an empty id; one that starts with the prefix below) is
 *   `toolu_sy_` + the base64url of its UTF-8 bytes, unpadded;
 * - on the way back an id that starts with `toolu_sy_` and whose rest is
 *   canonical base64url of valid UTF-8 is decoded; every other id (the
 *   client's own, Anthropic's `toolu_01…`) goes to the provider unchanged.
 *
 * So `toProviderToolId(toAnthropicToolId(id)) === id` for every well-formed
 * string (ids.test.ts holds it), and nothing is stored.
 */
import { randomBytes } from 'node:crypto';

/** Anthropic's pattern for `tool_use.id` and `tool_result.tool_use_id`. */
export const TOOL_ID_PATTERN = /^[a-zA-Z0-9_-]+$/;

/** Marks an id that carries a provider id encoded (no provider or client id of Anthropic's starts so). */
export const ENCODED_TOOL_ID_PREFIX = 'toolu_sy_';

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The `tool_use.id` the gateway emits for a provider's tool call id.
 *
 * @example
 *   toAnthropicToolId('call_Q7vTn2Lm') // → 'call_Q7vTn2Lm'
 *   toAnthropicToolId('call_1__thought__Cs4B+w==') // → 'toolu_sy_Y2FsbF8xX190aG91Z2h0X19DczRCK3c9PQ'
 */
export function toAnthropicToolId(providerId: string): string {
  if (TOOL_ID_PATTERN.test(providerId) && !providerId.startsWith(ENCODED_TOOL_ID_PREFIX)) return providerId;
  return ENCODED_TOOL_ID_PREFIX + Buffer.from(providerId, 'utf8').toString('base64url');
}

/**
 * The provider's id for a `tool_use.id` / `tool_result.tool_use_id` the
 * client sent back: decoded when the gateway encoded it, else as it is.
 *
 * @example
 *   toProviderToolId('toolu_sy_Y2FsbF8xX190aG91Z2h0X19DczRCK3c9PQ') // → 'call_1__thought__Cs4B+w=='
 *   toProviderToolId('toolu_01A09q90qw90lq917835lq9') // → 'toolu_01A09q90qw90lq917835lq9'
 */
export function toProviderToolId(id: string): string {
  if (!id.startsWith(ENCODED_TOOL_ID_PREFIX)) return id;
  const encoded = id.slice(ENCODED_TOOL_ID_PREFIX.length);
  const bytes = Buffer.from(encoded, 'base64url');
  // Node's decoder skips what is not base64url: only the canonical spelling is one of ours.
  if (bytes.toString('base64url') !== encoded) return id;
  try {
    return decoder.decode(bytes);
  } catch {
    return id;
  }
}

/** Makes the ids the upstream did not give (a message's, a tool call's); tests give a counter, the gateway `uniqueIds`. */
export type IdSource = (prefix: 'msg' | 'toolu') => string;

/**
 * Unique in this thread by a counter, and across threads, pods and restarts
 * by a random part drawn once (as responses/response.ts's uniqueIds).
 */
const THREAD_PART = randomBytes(8).toString('hex');
let counter = 0;
export const uniqueIds: IdSource = (prefix) => `${prefix}_sy${THREAD_PART}${(++counter).toString(16).padStart(10, '0')}`;

/**
 * A Message `id` from the chat completion's: `msg_` + the chat id (an id
 * that is `msg_…` already is kept), characters outside the pattern as `_`,
 * so a log line's chat id and the client's message id name one answer.
 *
 * @example
 *   messageIdOf('chatcmpl-BZ5xN8sL', uniqueIds) // → 'msg_chatcmpl-BZ5xN8sL'
 */
export function messageIdOf(chatId: unknown, ids: IdSource): string {
  if (typeof chatId !== 'string' || chatId.length === 0) return ids('msg');
  const safe = chatId.replace(/[^a-zA-Z0-9_-]/g, '_');
  return safe.startsWith('msg_') ? safe : `msg_${safe}`;
}
