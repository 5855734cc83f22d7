/**
 * The route table: the one place each route is defined. It drives the uWS
 * router (src/front/server.ts), the auth rule of each route, the 404/405
 * answers, and the test that keeps `openapi.yaml` in step with the server.
 */

import { z, type ZodType } from 'zod';
import type { Operation } from '../../protocol/frames.js';
import {
  chatRequestSchema,
  chatResponseSchema,
  countTokensRequestSchema,
  countTokensResponseSchema,
  embeddingsRequestSchema,
  messageObjectSchema,
  messagesRequestSchema,
  embeddingsResponseSchema,
  modelListSchema,
  modelSchema,
  responseObjectSchema,
  responsesRequestSchema,
} from '../../protocol/requests.js';
import { gatewayStatusSchema, modelStatusListSchema, modelStatusSchema } from './status-schemas.js';

export type HttpMethod = 'GET' | 'POST';

/**
 * `bearer`: spec 000 Authentication (plus POST /v1/embeddings, CONTRACT.md). `anthropic`: a gateway
 * key in `x-api-key` or `Authorization: Bearer`, refused in Anthropic's error shape (CONTRACT.md,
 * Anthropic Messages API (inbound), Auth); a `bearer` route takes the same from a request that
 * carries `anthropic-version`.
 */
export type RouteAuth = 'bearer' | 'anthropic' | 'none';

/** What serves the route. `provider` routes go to the worker pool; the rest are answered on the front thread. */
export type RouteKind =
  | 'chat'
  | 'embeddings'
  | 'responses'
  | 'messages'
  | 'count_tokens'
  | 'models'
  | 'model'
  | 'live'
  | 'ready'
  | 'health'
  | 'status'
  | 'status_models'
  | 'status_model'
  | 'metrics'
  | 'agent'
  | 'manifest'
  | 'docs';

/**
 * A route that is a callable operation for agents (spec 001, Tool
 * definition); `input`/`output` are zod schemas, turned into the
 * manifest's JSON Schemas.
 */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly scopes: readonly string[];
  /** `write`: the call spends provider quota or credit; `read`: it only reads gateway state. */
  readonly effect: 'read' | 'write';
  readonly idempotent: boolean;
  /** True for operations that enqueue a job and answer before it runs; none of the gateway's do. */
  readonly enqueuesJob: boolean;
  readonly input: ZodType;
  readonly output: ZodType;
}

export interface RouteSpec {
  readonly method: HttpMethod;
  /** OpenAPI-style path: `{name}` marks a path parameter. */
  readonly path: string;
  readonly auth: RouteAuth;
  readonly kind: RouteKind;
  readonly summary: string;
  readonly tool?: ToolSpec;
}

const noInput = z.object({});

export const ROUTES: readonly RouteSpec[] = [
  {
    method: 'POST',
    path: '/v1/chat/completions',
    auth: 'bearer',
    kind: 'chat',
    summary: 'Chat completion, streamed as SSE when stream is true',
    tool: {
      name: 'create_chat_completion',
      description: 'Sends a chat conversation to the model a configured alias routes to and returns its completion (or an SSE stream with stream: true).',
      scopes: ['chat:create'],
      effect: 'write',
      idempotent: false,
      enqueuesJob: false,
      input: chatRequestSchema,
      output: chatResponseSchema,
    },
  },
  {
    method: 'POST',
    path: '/v1/embeddings',
    auth: 'bearer',
    kind: 'embeddings',
    summary: 'Embeddings for a string or an array of strings',
    tool: {
      name: 'create_embeddings',
      description: 'Returns embedding vectors for a string or an array of strings from the model a configured alias routes to.',
      scopes: ['embeddings:create'],
      effect: 'write',
      idempotent: true,
      enqueuesJob: false,
      input: embeddingsRequestSchema,
      output: embeddingsResponseSchema,
    },
  },
  {
    method: 'POST',
    path: '/v1/responses',
    auth: 'bearer',
    kind: 'responses',
    summary: 'OpenAI Responses API, stateless: passed through to deployments that serve it, otherwise run through chat; SSE events when stream is true',
    tool: {
      name: 'create_response',
      description:
        'Sends input (a string or message, function_call and function_call_output items) with optional instructions, function tools and a JSON-schema text format to the model a configured alias routes to, and returns a response object (or its SSE event stream with stream: true). Nothing is stored: previous_response_id is refused.',
      scopes: ['responses:create'],
      effect: 'write',
      idempotent: false,
      enqueuesJob: false,
      input: responsesRequestSchema,
      output: responseObjectSchema,
    },
  },
  {
    method: 'POST',
    path: '/v1/messages',
    auth: 'anthropic',
    kind: 'messages',
    summary: "Anthropic Messages API: passed through to anthropic deployments and Bedrock's Claude, otherwise run through chat; Anthropic's SSE events when stream is true",
    tool: {
      name: 'create_message',
      description:
        "Sends an Anthropic Messages request (messages, system, max_tokens, tools, tool_choice, thinking…) to the model a configured alias routes to, and returns an Anthropic Message (or its SSE event stream with stream: true). Errors are in Anthropic's shape. A query string (?beta=true) is ignored.",
      scopes: ['messages:create'],
      effect: 'write',
      idempotent: false,
      enqueuesJob: false,
      input: messagesRequestSchema,
      output: messageObjectSchema,
    },
  },
  {
    method: 'POST',
    path: '/v1/messages/count_tokens',
    auth: 'anthropic',
    kind: 'count_tokens',
    summary: "Input tokens of a Messages request: an anthropic deployment's own count, otherwise a local o200k estimate",
    tool: {
      name: 'count_message_tokens',
      description:
        "Counts the input tokens of an Anthropic Messages request (system, messages, tools) for the model a configured alias routes to: an anthropic deployment's own count_tokens, otherwise an estimate with the o200k BPE tokenizer plus a small overhead per message.",
      scopes: ['messages:create'],
      effect: 'read',
      idempotent: true,
      enqueuesJob: false,
      input: countTokensRequestSchema,
      output: countTokensResponseSchema,
    },
  },
  {
    method: 'GET',
    path: '/v1/models',
    auth: 'bearer',
    kind: 'models',
    summary: 'The configured model_list aliases',
    tool: { name: 'list_models', description: 'Lists the model aliases callers may send as "model".', scopes: ['models:read'], effect: 'read', idempotent: true, enqueuesJob: false, input: noInput, output: modelListSchema },
  },
  {
    method: 'GET',
    path: '/v1/models/{model}',
    auth: 'bearer',
    kind: 'model',
    summary: 'One alias in the compatible model format',
    tool: { name: 'retrieve_model', description: 'Returns one configured model alias, or 404 when no alias has the name.', scopes: ['models:read'], effect: 'read', idempotent: true, enqueuesJob: false, input: z.object({ model: z.string().min(1) }), output: modelSchema },
  },
  { method: 'GET', path: '/health/live', auth: 'none', kind: 'live', summary: 'Liveness: the process answers; runs no checks' },
  { method: 'GET', path: '/health/liveliness', auth: 'none', kind: 'live', summary: 'Liveness (LiteLLM-compatible path); runs no checks' },
  { method: 'GET', path: '/health', auth: 'none', kind: 'health', summary: 'Health report of every registered check' },
  { method: 'GET', path: '/ready', auth: 'none', kind: 'ready', summary: 'Readiness: 200 when at least one route has provider credentials, else 503' },
  {
    method: 'GET',
    path: '/status',
    auth: 'none',
    kind: 'status',
    summary: 'Gateway counters and the configured model count',
    tool: { name: 'get_gateway_status', description: 'Gateway counters, uptime, worker count and the number of configured models.', scopes: ['status:read'], effect: 'read', idempotent: true, enqueuesJob: false, input: noInput, output: gatewayStatusSchema },
  },
  {
    method: 'GET',
    path: '/status/models',
    auth: 'bearer',
    kind: 'status_models',
    summary: 'Route and credential status of every alias',
    tool: { name: 'list_model_status', description: 'Route and credential status of every configured alias (never the keys).', scopes: ['status:read'], effect: 'read', idempotent: true, enqueuesJob: false, input: noInput, output: modelStatusListSchema },
  },
  {
    method: 'GET',
    path: '/status/models/{model}',
    auth: 'bearer',
    kind: 'status_model',
    summary: 'Route and credential status of one alias',
    tool: { name: 'get_model_status', description: 'Route and credential status of one configured alias.', scopes: ['status:read'], effect: 'read', idempotent: true, enqueuesJob: false, input: z.object({ model: z.string().min(1) }), output: modelStatusSchema },
  },
  { method: 'GET', path: '/metrics', auth: 'none', kind: 'metrics', summary: 'Prometheus text exposition' },
  { method: 'GET', path: '/agent', auth: 'none', kind: 'agent', summary: 'Agent description: name, version, description, storage mode' },
  { method: 'GET', path: '/agent/manifest', auth: 'none', kind: 'manifest', summary: 'Agent manifest: the description plus a tool per callable operation' },
  { method: 'GET', path: '/docs', auth: 'none', kind: 'docs', summary: 'HTML summary of the API, generated from the route table' },
];

/** The route kinds a worker serves: each is the provider operation of the same name. */
export function isProviderKind(kind: RouteKind): kind is Operation {
  return kind === 'chat' || kind === 'embeddings' || kind === 'responses' || kind === 'messages' || kind === 'count_tokens';
}

/** `/status/models/{model}` → `/status/models/:model`, the uWS pattern syntax. */
export function uwsPattern(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

/** Methods registered on each path, for the `Allow` header of a 405. */
export function methodsByPath(routes: readonly RouteSpec[] = ROUTES): Map<string, HttpMethod[]> {
  const byPath = new Map<string, HttpMethod[]>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? [];
    methods.push(route.method);
    byPath.set(route.path, methods);
  }
  return byPath;
}
