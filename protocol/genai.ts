/**
 * The span attributes Switchyard records (CONTRACT.md, Tracing), in one
 * table for both threads: the OpenTelemetry GenAI semantic conventions'
 * names, HTTP's, and its own under `switchyard.`. The front names what it
 * sees (status, route, routing facts, usage); the worker names what only it
 * can read, the request body and the answer (protocol/frames.ts, SpanFacts),
 * because the front never parses a body. test/tracing.test.ts checks every
 * name against @opentelemetry/semantic-conventions.
 */
export const ATTR = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  requestStream: 'gen_ai.request.stream',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  timeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  // Opt-in content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), as JSON strings: attributes
  // carry no nested structures in OpenTelemetry JS, which the conventions allow for spans.
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  urlPath: 'url.path',
  urlScheme: 'url.scheme',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  requestId: 'switchyard.request_id',
  deployment: 'switchyard.deployment',
  attempt: 'switchyard.attempt',
  attempts: 'switchyard.attempts',
  fallback: 'switchyard.fallback',
  // The waits before an attempt (a provider's Retry-After, router_settings.retry_after): on the attempt's span, and in all on the request's.
  backoffMs: 'switchyard.backoff_ms',
  backoffReason: 'switchyard.backoff_reason',
} as const;

/** The event on an attempt span at a stream's first content from the upstream (time to first token). */
export const FIRST_CHUNK_EVENT = 'switchyard.first_chunk';

/**
 * Request body fields the conventions name, and their attribute: chat's,
 * the Responses API's `max_output_tokens`, embeddings'. `stop` and
 * `encoding_format` become lists; `n` is recorded only when it is not 1,
 * as the conventions ask.
 */
export const REQUEST_PARAMS: readonly (readonly [field: string, attribute: string])[] = [
  ['temperature', 'gen_ai.request.temperature'],
  ['top_p', 'gen_ai.request.top_p'],
  ['top_k', 'gen_ai.request.top_k'],
  ['max_tokens', 'gen_ai.request.max_tokens'],
  ['max_completion_tokens', 'gen_ai.request.max_tokens'],
  ['max_output_tokens', 'gen_ai.request.max_tokens'],
  ['frequency_penalty', 'gen_ai.request.frequency_penalty'],
  ['presence_penalty', 'gen_ai.request.presence_penalty'],
  ['seed', 'gen_ai.request.seed'],
  ['n', 'gen_ai.request.choice.count'],
  ['stop', 'gen_ai.request.stop_sequences'],
  ['encoding_format', 'gen_ai.request.encoding_formats'],
  ['dimensions', 'gen_ai.embeddings.dimension.count'],
];

/** `gen_ai.provider.name` where the conventions' well-known value differs from the provider's name in the config. */
const GENAI_PROVIDER: Readonly<Record<string, string>> = { azure: 'azure.ai.openai', gemini: 'gcp.gemini', bedrock: 'aws.bedrock' };

export function genAiProvider(provider: string): string {
  return GENAI_PROVIDER[provider] ?? provider;
}

/** `gen_ai.operation.name` of an operation: the Responses API and Anthropic's Messages (and its token count) are a chat. */
export function genAiOperation(op: 'chat' | 'embeddings' | 'responses' | 'messages' | 'count_tokens'): 'chat' | 'embeddings' {
  return op === 'embeddings' ? 'embeddings' : 'chat';
}
