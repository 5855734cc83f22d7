/**
 * The compatible (OpenAI) shapes a translating adapter answers with, made
 * in one place: the error object of a provider 4xx, the embeddings list,
 * and reading a provider body as JSON.
 */
import { joinForNow } from '../../protocol/channel.js';
import { GatewayError } from '../../protocol/errors.js';
import { utf8Text } from '../bytes.js';

const encoder = new TextEncoder();

export interface ProviderError {
  readonly message: string;
  /** OpenAI's error `type`; null: named from the status. */
  readonly type: string | null;
  readonly code: string | null;
  readonly param: string | null;
}

/** OpenAI's types by status, for a provider error that names none (Azure's `type: null`). */
function typeOfStatus(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  return 'invalid_request_error';
}

/** `{"error":{"message","type","param","code"}}`, the body OpenAI answers a 4xx with. */
export function errorObject(status: number, error: ProviderError): { readonly contentType: string; readonly body: Uint8Array } {
  const body = { error: { message: error.message, type: error.type ?? typeOfStatus(status), param: error.param, code: error.code } };
  return { contentType: 'application/json', body: encoder.encode(JSON.stringify(body)) };
}

/** A provider body that is not JSON, as an error message: its text, trimmed and cut short. */
export function textMessage(status: number, text: string): string {
  const trimmed = text.trim().slice(0, 1000);
  return trimmed.length > 0 ? trimmed : `the provider answered with status ${status}`;
}

/** The whole body as text (a provider's error or answer: small, read whole). */
export const bodyText = (body: readonly Uint8Array[]): string => utf8Text(joinForNow(body));

/** The body parsed as JSON; upstream_invalid_response when it is not. */
export function parseBody(body: readonly Uint8Array[]): unknown {
  try {
    return JSON.parse(bodyText(body));
  } catch {
    throw new GatewayError('upstream_invalid_response', 'the provider response is not JSON');
  }
}

/** JSON.parse, or undefined for text that is not JSON. */
export function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A string field, or null when absent or another type (numbers are spelled: Azure writes codes as "429"). */
export function stringOr(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return null;
}

/** OpenAI's base64 form of a vector (`encoding_format: "base64"`): little-endian float32, base64-encoded. */
export function float32Base64(values: readonly number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/** The embeddings answer: one item per vector, `index` its place in the input, base64 when the caller asked for it. */
export function embeddingList(vectors: ReadonlyArray<readonly number[]>, model: string, promptTokens: number, base64: boolean): Record<string, unknown> {
  const data = vectors.map((values, index) => ({ object: 'embedding', index, embedding: base64 ? float32Base64(values) : values }));
  return { object: 'list', data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
}
