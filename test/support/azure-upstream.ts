/**
 * A fake Azure OpenAI resource on 127.0.0.1, in its real wire format (the
 * Azure OpenAI REST reference, data plane 2024-10-21; streams as recorded
 * from the service), proved by `openai`'s AzureOpenAI client in
 * azure-upstream.test.ts:
 * - `POST /openai/deployments/<deployment>/chat/completions?api-version=…`
 *   and `…/embeddings`, the key in `api-key`; an unknown deployment is 404
 *   `DeploymentNotFound`, a missing api-version 404;
 * - answers carry Azure's content-filter annotations
 *   (`prompt_filter_results`, per choice `content_filter_results`);
 * - streams begin with a chunk of empty `choices` and the prompt's filter
 *   results (id, model and object empty), put `content_filter_results` on
 *   every choice, stream tool calls as OpenAI does, add a usage chunk when
 *   asked and, with `asyncFilter`, an annotation-only chunk before `[DONE]`;
 * - errors as Azure writes them: `{"error":{"code":"429","message"}}`
 *   without `type`, or the content filter's 400 with `type: null`, `param`
 *   and `innererror`; `x-ratelimit-remaining-*`, `retry-after`,
 *   `retry-after-ms`, and headers of its own (`apim-request-id`, `x-ms-region`);
 * - `GET /openai/models?api-version=…`: the model list (the free probe).
 */
import { sendJson, startFakeServer, writePieces, type FakeRequest, type FakeServer } from './http-fake.js';

export interface AzureToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** What the fake does with one chat or embeddings request. */
export type AzureReply =
  /** A chat answer (JSON, or a stream); `intervalMs` between stream chunks (0: one write). */
  | { readonly kind: 'chat'; readonly content?: string; readonly toolCalls?: readonly AzureToolCall[]; readonly finishReason?: string; readonly intervalMs?: number; readonly asyncFilter?: boolean }
  /** An error: this status and body (Azure's shapes: see errorBody), with extra headers. */
  | { readonly kind: 'error'; readonly status: number; readonly body: unknown; readonly headers?: Record<string, string> };

export interface AzureUpstream extends FakeServer {
  /** The `api_base` for a deployment: the resource endpoint. */
  readonly url: string;
  script(...replies: AzureReply[]): void;
  /** The chat and embeddings requests received. */
  calls(): FakeRequest[];
  reset(): void;
}

export const AZURE_KEY = 'azure-fake-key-0123456789abcdef';
export const AZURE_DEPLOYMENTS = ['gpt-4o-deploy', 'embed-deploy'] as const;

/** Azure's error bodies, as the service sends them. */
export const AZURE_ERRORS = {
  unauthorized: { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' } },
  rateLimited: { error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds.' } },
  contentFilter: {
    error: {
      message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
      type: null,
      param: 'prompt',
      code: 'content_filter',
      status: 400,
      innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { hate: { filtered: true, severity: 'high' } } },
    },
  },
} as const;

const SAFE = { filtered: false, severity: 'safe' };
const FILTERS = { hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE };

export async function startAzureUpstream(key = AZURE_KEY): Promise<AzureUpstream> {
  const queue: AzureReply[] = [];
  let served = 0;
  const server = await startFakeServer((req, res, { later, alive }) => {
    const n = ++served;
    const headers = { 'apim-request-id': `apim-${n}`, 'x-ms-region': 'Sweden Central', 'x-ratelimit-remaining-requests': '99', 'x-ratelimit-remaining-tokens': '99000' };
    if (req.headers['api-key'] !== key) return sendJson(res, 401, AZURE_ERRORS.unauthorized, headers);
    if (!req.query.get('api-version')) return sendJson(res, 404, { error: { code: '404', message: 'Resource not found' } }, headers);
    if (req.method === 'GET' && req.path === '/openai/models') {
      return sendJson(res, 200, { data: [{ id: 'gpt-4o', object: 'model', status: 'succeeded', created_at: 1715558400, capabilities: { chat_completion: true, embeddings: false } }], object: 'list' }, headers);
    }
    const route = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(req.path);
    if (req.method !== 'POST' || route === null) return sendJson(res, 404, { error: { code: '404', message: 'Resource not found' } }, headers);
    const deployment = decodeURIComponent(route[1] as string);
    if (!(AZURE_DEPLOYMENTS as readonly string[]).includes(deployment)) {
      return sendJson(res, 404, { error: { code: 'DeploymentNotFound', message: `The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.` } }, headers);
    }
    const reply = queue.shift() ?? { kind: 'chat' };
    if (reply.kind === 'error') return sendJson(res, reply.status, reply.body, { ...headers, ...reply.headers });
    if (route[2] === 'embeddings') return sendJson(res, 200, embeddings(req.body), headers);
    const model = 'gpt-4o-2024-08-06';
    const id = `chatcmpl-azure${n}`;
    const content = reply.content ?? (reply.toolCalls ? null : `Hello from Azure: ${lastUserText(req.body)}`);
    const finish = reply.finishReason ?? (reply.toolCalls ? 'tool_calls' : 'stop');
    const usage = { completion_tokens: 7, prompt_tokens: 11, total_tokens: 18, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
    if (req.body.stream !== true) {
      const message: Record<string, unknown> = { role: 'assistant', content, refusal: null };
      if (reply.toolCalls) message.tool_calls = reply.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
      return sendJson(res, 200, {
        choices: [{ content_filter_results: FILTERS, finish_reason: finish, index: 0, logprobs: null, message }],
        created: 1_750_697_159,
        id,
        model,
        object: 'chat.completion',
        prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTERS }],
        system_fingerprint: 'fp_ee1d74bde0',
        usage,
      }, headers);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', ...headers });
    const chunk = (choice: Record<string, unknown>) => data({ choices: [{ finish_reason: null, index: 0, logprobs: null, ...choice }], created: 1_750_697_159, id, model, object: 'chat.completion.chunk', system_fingerprint: 'fp_ee1d74bde0' });
    const pieces = [
      data({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTERS }] }),
      chunk({ content_filter_results: {}, delta: { content: '', refusal: null, role: 'assistant' } }),
    ];
    for (const word of content?.match(/\S+\s*/g) ?? []) pieces.push(chunk({ content_filter_results: FILTERS, delta: { content: word } }));
    reply.toolCalls?.forEach((t, index) => {
      pieces.push(chunk({ content_filter_results: {}, delta: { tool_calls: [{ index, id: t.id, type: 'function', function: { name: t.name, arguments: '' } }] } }));
      for (const piece of t.arguments.match(/[\s\S]{1,6}/g) ?? []) pieces.push(chunk({ content_filter_results: {}, delta: { tool_calls: [{ index, function: { arguments: piece } }] } }));
    });
    pieces.push(chunk({ content_filter_results: {}, delta: {}, finish_reason: finish }));
    if (reply.asyncFilter) pieces.push(data({ choices: [{ content_filter_offsets: { check_offset: 0, start_offset: 0, end_offset: 40 }, content_filter_results: FILTERS, finish_reason: null, index: 0 }], created: 0, id: '', model: '', object: '' }));
    const options = req.body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage) pieces.push(data({ choices: [], created: 1_750_697_159, id, model, object: 'chat.completion.chunk', system_fingerprint: 'fp_ee1d74bde0', usage }));
    pieces.push('data: [DONE]\n\n');
    writePieces(res, pieces, reply.intervalMs ?? 0, later, alive, () => res.end());
  });
  return {
    ...server,
    url: server.origin,
    script: (...replies) => void queue.push(...replies),
    calls: () => server.received.filter((r) => r.path.startsWith('/openai/deployments/')),
    reset() {
      queue.length = 0;
      server.received.length = 0;
    },
  };
}

const data = (chunk: unknown): string => `data: ${JSON.stringify(chunk)}\n\n`;

function lastUserText(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : '';
}

/** Floats, or little-endian float32 in base64 when asked (the openai SDK's default). */
function embeddings(body: Record<string, unknown>) {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const vector = [0.25, -0.5, 0.75];
  const encoded = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
  return { data: inputs.map((_, index) => ({ embedding: encoded, index, object: 'embedding' })), model: 'text-embedding-3-small', object: 'list', usage: { prompt_tokens: 4, total_tokens: 4 } };
}
