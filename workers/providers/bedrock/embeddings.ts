/**
 * Embeddings through InvokeModel (`POST /model/<id>/invoke`), whose body is
 * the model family's own (pure; examples in bedrock/golden/). CONTRACT.md,
 * Native providers, and the Bedrock model parameter references:
 * - Amazon Titan text embeddings (`amazon.titan-embed-text-*`,
 *   `amazon.titan-embed-g1-text-*`): `{inputText, dimensions?}` →
 *   `{embedding, inputTextTokenCount}`: ONE text per call, so a list is
 *   sent as one call per text, in order (adapter.ts);
 * - Cohere embed (`cohere.embed-*`): `{texts, input_type, truncate?,
 *   output_dimension?}` → `{embeddings}` (a list of vectors, or
 *   `{float: […]}` by type): up to 96 texts per call; `input_type` is the
 *   caller's `input_type` field when it sends one (`search_document`,
 *   `search_query`, `classification`, `clustering`), else
 *   `search_document`;
 * - `dimensions` → Titan's `dimensions`, Cohere's `output_dimension` (the
 *   model refuses sizes it lacks: its 400 passes through);
 *   `encoding_format` is the gateway's (base64 made here); `user` is
 *   dropped; token arrays as input are refused (no family takes them).
 * Any other model id (a Bedrock embedding model of another family, an
 * inference profile ARN that hides the family) is 400
 * `unsupported_operation`.
 */
import { GatewayError } from '../../../protocol/errors.js';
import { isRecord } from '../compatible.js';

export type EmbeddingFamily = 'titan' | 'cohere';

/** Texts per call: Titan takes one, Cohere up to 96. */
export const BATCH_SIZE: Readonly<Record<EmbeddingFamily, number>> = { titan: 1, cohere: 96 };

const INPUT_TYPES = new Set(['search_document', 'search_query', 'classification', 'clustering']);

/** The family of an embedding model id (a cross-region profile's `us.`/`eu.` prefix allowed), or null. */
export function embeddingFamily(modelId: string): EmbeddingFamily | null {
  const bare = modelId.replace(/^(?:[a-z]{2,4})\.(?=[a-z]+\.)/, '');
  if (/^amazon\.titan-embed-(?:text|g1-text)/.test(bare)) return 'titan';
  if (/^cohere\.embed-/.test(bare)) return 'cohere';
  return null;
}

/** The caller's inputs as texts; a string is one. */
export function embeddingTexts(input: unknown): string[] {
  const list = Array.isArray(input) ? input : [input];
  if (list.length === 0) throw new GatewayError('invalid_request', 'input: must not be empty');
  return list.map((text, i) => {
    if (typeof text !== 'string') throw new GatewayError('unsupported_parameter', `input[${i}]: the bedrock provider embeds text, not token arrays`);
    return text;
  });
}

/** The InvokeModel body for one batch of texts. */
export function embeddingRequest(family: EmbeddingFamily, texts: readonly string[], body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
  if (family === 'titan') return dimensions === undefined ? { inputText: texts[0] } : { inputText: texts[0], dimensions };
  const inputType = body.input_type ?? 'search_document';
  if (typeof inputType !== 'string' || !INPUT_TYPES.has(inputType)) {
    throw new GatewayError('invalid_request', `input_type: must be one of ${[...INPUT_TYPES].join(', ')}`);
  }
  const out: Record<string, unknown> = { texts, input_type: inputType };
  if (dimensions !== undefined) out.output_dimension = dimensions;
  return out;
}

/** The vectors of one InvokeModel answer, in input order, and its token count when the body has one. */
export function embeddingVectors(family: EmbeddingFamily, answer: unknown, expected: number): { vectors: number[][]; tokens: number | null } {
  if (family === 'titan') {
    if (!isRecord(answer) || !isVector(answer.embedding)) throw invalid();
    return { vectors: [answer.embedding], tokens: typeof answer.inputTextTokenCount === 'number' ? answer.inputTextTokenCount : null };
  }
  const embeddings = isRecord(answer) ? answer.embeddings : undefined;
  // embeddings_floats: a list of vectors; embeddings_by_type (v4, or when types are asked for): {float: [...]}.
  const vectors = isRecord(embeddings) ? embeddings.float : embeddings;
  if (!Array.isArray(vectors) || vectors.length !== expected || !vectors.every(isVector)) throw invalid();
  return { vectors, tokens: null };
}

const isVector = (value: unknown): value is number[] => Array.isArray(value) && value.every((v) => typeof v === 'number');

const invalid = () => new GatewayError('upstream_invalid_response', 'the provider answer has no embeddings for every input');
