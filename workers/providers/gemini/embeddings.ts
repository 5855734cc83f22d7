/**
 * Embeddings through Gemini's `batchEmbedContents` (pure; examples in
 * gemini/golden/). CONTRACT.md, Native providers and HTTP:
 * - each input string is one request `{model: "models/<id>", content:
 *   {parts: [{text}]}}`, in order; `dimensions` → `outputDimensionality`;
 *   `user` is not sent; token-id inputs have no equivalent (Gemini embeds
 *   text): 400 `unsupported_parameter`;
 * - the answer's `embeddings[i].values` → `data[i]` of the compatible list,
 *   `index` = i (Gemini answers in the order asked), as floats or, with
 *   `encoding_format: "base64"` (the openai SDK's default), as
 *   little-endian float32 in base64;
 * - Gemini reports no token count for embeddings: the list has no `usage`
 *   (rather than a made-up 0), and the gateway counts none.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { float32Base64, isRecord } from '../compatible.js';

export function toBatchEmbedRequest(body: Readonly<Record<string, unknown>>, model: string): Record<string, unknown> {
  const raw = body.input;
  const inputs: unknown[] = Array.isArray(raw) ? raw : [raw];
  if (!inputs.every((input) => typeof input === 'string')) {
    throw new GatewayError('unsupported_parameter', 'input: the gemini provider embeds text: token ids have no equivalent');
  }
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : null;
  const requests = inputs.map((text) => {
    const request: Record<string, unknown> = { model: `models/${model}`, content: { parts: [{ text }] } };
    if (dimensions !== null) request.outputDimensionality = dimensions;
    return request;
  });
  return { requests };
}

export interface EmbeddingOptions {
  /** The upstream model id, the list's `model`. */
  readonly model: string;
  /** `encoding_format: "base64"`. */
  readonly base64: boolean;
  /** How many inputs were sent: Gemini answers one embedding each. */
  readonly inputs: number;
}

export function toEmbeddingList(response: unknown, options: EmbeddingOptions): Record<string, unknown> {
  const embeddings = isRecord(response) && Array.isArray(response.embeddings) ? response.embeddings : null;
  if (embeddings === null || embeddings.length !== options.inputs) {
    throw new GatewayError('upstream_invalid_response', 'the provider answer does not have one embedding per input');
  }
  const data = embeddings.map((embedding, index) => {
    const values = isRecord(embedding) && Array.isArray(embedding.values) ? (embedding.values as unknown[]) : null;
    if (values === null || !values.every((v) => typeof v === 'number')) throw new GatewayError('upstream_invalid_response', `the provider's embedding ${index} has no values`);
    return { object: 'embedding', index, embedding: options.base64 ? float32Base64(values as number[]) : values };
  });
  return { object: 'list', data, model: options.model };
}
