/**
 * A fake upstream with a scripted model behind two wire formats: OpenAI's
 * chat completions (`POST /v1/chat/completions`) and its Responses API
 * (`POST /v1/responses`), each whole or streamed. The model decides the
 * same way whichever format asks, so a test can compare the gateway's
 * translation with the pass-through:
 *
 * - tools offered and no tool result yet: it calls the first tool, with
 *   `{"<its first parameter>": "<the last word of the user's text>"}`;
 * - a tool result is the last turn: it answers `The tool said: <result>`;
 * - a JSON-schema output format: it answers a JSON object with every
 *   property of the schema (strings "fake", numbers 1, booleans true);
 * - otherwise: `echo: <the user's last text>`.
 *
 * The Responses wire is written here from OpenAI's documentation, not from
 * the gateway's translators, so one cannot hide a fault of the other. As
 * api.openai.com does, it answers any other method and path 404 `Invalid
 * URL`, and a request without UPSTREAM_KEY 401 `invalid_api_key`.
 * Node built-ins only; loopback only.
 */
import http from 'node:http';
import { UPSTREAM_KEY } from './gateway.js';
import { listenOnLoopback } from './listen.js';

type Json = Record<string, unknown>;

export interface ResponsesUpstreamRequest {
  readonly method: string;
  readonly path: string;
  /** The key of its `Authorization: Bearer <key>`, or null. */
  readonly key: string | null;
  readonly headers: http.IncomingHttpHeaders;
  readonly json: Json;
}

export type ResponsesUpstreamFault =
  /** Answer this status with an OpenAI error body. */
  | { kind: 'status'; status: number; message: string; code?: string }
  /** A stream that sends `after` events (chunks), then breaks the connection. */
  | { kind: 'break'; after: number }
  /** A stream that sends `after` events, then an in-band error event (chat: `data: {"error":…}`; Responses: `error` + `response.failed`). */
  | { kind: 'error-event'; after: number };

export interface ResponsesUpstream {
  /** http://127.0.0.1:PORT/v1 — the api_base. */
  readonly url: string;
  readonly requests: ResponsesUpstreamRequest[];
  /** The next request (only) meets this fault. */
  failNext(fault: ResponsesUpstreamFault): void;
  reset(): void;
  close(): Promise<void>;
}

const CREATED = 1_750_000_000;
const MODEL_SUFFIX = '-2025-01-01';

/** What the scripted model does with a conversation. */
type Turn = { kind: 'text'; text: string } | { kind: 'call'; name: string; args: string };

interface Conversation {
  /** Every text the user wrote, last one last. */
  lastUserText: string;
  /** The last turn's tool result, when the last turn is one. */
  toolResult: string | null;
  firstTool: { name: string; parameters: Json } | null;
  jsonSchema: Json | null;
  promptWords: number;
}

function decide(c: Conversation): Turn {
  if (c.toolResult !== null) return { kind: 'text', text: `The tool said: ${c.toolResult}` };
  if (c.firstTool) {
    const properties = isRecord(c.firstTool.parameters.properties) ? Object.keys(c.firstTool.parameters.properties) : [];
    const word = c.lastUserText.trim().split(/\s+/).pop()?.replace(/[^\p{L}\p{N}_-]/gu, '') ?? '';
    return { kind: 'call', name: c.firstTool.name, args: JSON.stringify(properties.length > 0 ? { [properties[0] as string]: word } : {}) };
  }
  if (c.jsonSchema) return { kind: 'text', text: JSON.stringify(sampleOf(c.jsonSchema)) };
  return { kind: 'text', text: `echo: ${c.lastUserText}` };
}

function sampleOf(schema: Json): unknown {
  switch (schema.type) {
    case 'object': {
      const out: Json = {};
      const properties = isRecord(schema.properties) ? schema.properties : {};
      for (const [key, value] of Object.entries(properties)) out[key] = sampleOf(value as Json);
      return out;
    }
    case 'array':
      return [];
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    default:
      return 'fake';
  }
}

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const words = (s: string): number => s.split(/\s+/).filter(Boolean).length;
const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('') : '';

// ── reading each format's conversation ──

function chatConversation(body: Json): Conversation {
  const messages = (Array.isArray(body.messages) ? body.messages : []) as Json[];
  const last = messages[messages.length - 1];
  const users = messages.filter((m) => m.role === 'user');
  const tools = (Array.isArray(body.tools) ? body.tools : []) as Json[];
  const fn = isRecord(tools[0]?.function) ? (tools[0].function as Json) : null;
  const format = isRecord(body.response_format) ? body.response_format : null;
  return {
    lastUserText: textOf(users[users.length - 1]?.content),
    toolResult: last?.role === 'tool' ? textOf(last.content) : null,
    firstTool: fn ? { name: String(fn.name), parameters: isRecord(fn.parameters) ? fn.parameters : {} } : null,
    jsonSchema: format?.type === 'json_schema' && isRecord(format.json_schema) && isRecord(format.json_schema.schema) ? format.json_schema.schema : null,
    promptWords: Math.max(1, messages.reduce((n, m) => n + words(textOf(m.content)), 0)),
  };
}

function responsesConversation(body: Json): Conversation {
  const items: Json[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : ((Array.isArray(body.input) ? body.input : []) as Json[]);
  const last = items[items.length - 1];
  const users = items.filter((i) => i.role === 'user');
  const tools = (Array.isArray(body.tools) ? body.tools : []) as Json[];
  const tool = tools.find((t) => t.type === 'function');
  const format = isRecord(body.text) && isRecord(body.text.format) ? body.text.format : null;
  return {
    lastUserText: textOf(users[users.length - 1]?.content),
    toolResult: last?.type === 'function_call_output' ? textOf(last.output) : null,
    firstTool: tool ? { name: String(tool.name), parameters: isRecord(tool.parameters) ? tool.parameters : {} } : null,
    jsonSchema: format?.type === 'json_schema' && isRecord(format.schema) ? format.schema : null,
    promptWords: Math.max(1, items.reduce((n, i) => n + words(textOf(i.content ?? i.output ?? '')), 0) + words(String(body.instructions ?? ''))),
  };
}

/** Two or three pieces, as a model streams a text. */
function pieces(text: string): string[] {
  const a = Math.ceil(text.length / 3);
  return [text.slice(0, a), text.slice(a, 2 * a), text.slice(2 * a)].filter((p) => p.length > 0);
}

// ── chat completions ──

function chatAnswer(body: Json, n: number): { json: Json; events: string[] } {
  const conversation = chatConversation(body);
  const turn = decide(conversation);
  const id = `chatcmpl-fake${n}`;
  const model = `${String(body.model)}${MODEL_SUFFIX}`;
  const outWords = turn.kind === 'text' ? words(turn.text) : 5;
  const usage = { prompt_tokens: conversation.promptWords, completion_tokens: outWords, total_tokens: conversation.promptWords + outWords, prompt_tokens_details: { cached_tokens: 0 } };
  const callId = `call_fake${n}`;
  const message =
    turn.kind === 'text'
      ? { role: 'assistant', content: turn.text, refusal: null }
      : { role: 'assistant', content: null, tool_calls: [{ id: callId, type: 'function', function: { name: turn.name, arguments: turn.args } }], refusal: null };
  const finish = turn.kind === 'text' ? 'stop' : 'tool_calls';
  const json = { id, object: 'chat.completion', created: CREATED, model, choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage };
  const chunk = (delta: Json, finishReason: string | null) => ({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
  const events: Json[] = [chunk({ role: 'assistant', content: '' }, null)];
  if (turn.kind === 'text') for (const p of pieces(turn.text)) events.push(chunk({ content: p }, null));
  else {
    events.push(chunk({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: turn.name, arguments: '' } }] }, null));
    for (const p of pieces(turn.args)) events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }, null));
  }
  events.push(chunk({}, finish));
  const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
  if (streamOptions.include_usage === true) events.push({ id, object: 'chat.completion.chunk', created: CREATED, model, choices: [], usage });
  return { json, events: [...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), 'data: [DONE]\n\n'] };
}

// ── the Responses API ──

function responsesAnswer(body: Json, n: number): { json: Json; events: string[] } {
  const conversation = responsesConversation(body);
  const turn = decide(conversation);
  const outWords = turn.kind === 'text' ? words(turn.text) : 5;
  const base = {
    id: `resp_fake${n}`,
    object: 'response',
    created_at: CREATED,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: `${String(body.model)}${MODEL_SUFFIX}`,
    output: [] as Json[],
    parallel_tool_calls: true,
    previous_response_id: null,
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    usage: null as Json | null,
    metadata: {},
  };
  const usage = { input_tokens: conversation.promptWords, input_tokens_details: { cached_tokens: 0 }, output_tokens: outWords, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: conversation.promptWords + outWords };
  const itemId = turn.kind === 'text' ? `msg_fake${n}` : `fc_fake${n}`;
  const done: Json =
    turn.kind === 'text'
      ? { id: itemId, type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text: turn.text }], role: 'assistant' }
      : { id: itemId, type: 'function_call', status: 'completed', arguments: turn.args, call_id: `call_fake${n}`, name: turn.name };
  const json = { ...base, status: 'completed', output: [done], usage };

  let sequence = 0;
  const events: string[] = [];
  const emit = (type: string, fields: Json) => events.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
  emit('response.created', { response: base });
  emit('response.in_progress', { response: base });
  if (turn.kind === 'text') {
    emit('response.output_item.added', { output_index: 0, item: { id: itemId, type: 'message', status: 'in_progress', content: [], role: 'assistant' } });
    emit('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } });
    for (const p of pieces(turn.text)) emit('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: p, logprobs: [] });
    emit('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text: turn.text, logprobs: [] });
    emit('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part: (done.content as Json[])[0] });
  } else {
    emit('response.output_item.added', { output_index: 0, item: { ...done, status: 'in_progress', arguments: '' } });
    for (const p of pieces(turn.args)) emit('response.function_call_arguments.delta', { item_id: itemId, output_index: 0, delta: p });
    emit('response.function_call_arguments.done', { item_id: itemId, output_index: 0, arguments: turn.args });
  }
  emit('response.output_item.done', { output_index: 0, item: done });
  emit('response.completed', { response: json });
  return { json, events };
}

function errorEvents(format: 'chat' | 'responses', after: number): string {
  if (format === 'chat') return `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: 'server_error' } })}\n\n`;
  const error = { code: 'server_error', message: 'The server had an error while processing your request.' };
  return (
    `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: after, ...error, param: null })}\n\n` +
    `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: after + 1, response: { id: 'resp_failed', object: 'response', status: 'failed', error, output: [] } })}\n\n`
  );
}

/**
 * model_list entries (YAML) for the two ways a Responses call reaches `up`: `translated` (its
 * chat completions, through the gateway's translation) and `passed` (its /v1/responses, with
 * params.responses_api), and the mock's `mock-chat`.
 */
export function responsesAliases(up: ResponsesUpstream): string {
  return `
  - model_name: mock-chat
    params: { model: mock/chat-small, mock_stream_chunks: 5 }
  - model_name: translated
    params: { model: openai/gpt-fake, api_base: ${up.url}, api_key: ${UPSTREAM_KEY} }
  - model_name: passed
    params: { model: openai/gpt-fake, api_base: ${up.url}, api_key: ${UPSTREAM_KEY}, responses_api: true }`;
}

export async function startResponsesUpstream(): Promise<ResponsesUpstream> {
  const requests: ResponsesUpstreamRequest[] = [];
  let fault: ResponsesUpstreamFault | null = null;
  let count = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      let json: Json | null = null;
      try {
        json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
      } catch {
        // answered 400 below, once the path and key are judged
      }
      const key = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
      requests.push({ method: req.method ?? 'GET', path, key, headers: req.headers, json: json ?? {} });
      const format = path === '/v1/chat/completions' ? 'chat' : path === '/v1/responses' ? 'responses' : null;
      if (req.method !== 'POST' || format === null) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `Invalid URL (${req.method} ${path})`, type: 'invalid_request_error', param: null, code: null } }));
        return;
      }
      if (key !== UPSTREAM_KEY) {
        const message = key === null ? "You didn't provide an API key." : 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.';
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: key === null ? null : 'invalid_api_key' } }));
        return;
      }
      if (json === null) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'We could not parse the JSON body of your request.', type: 'invalid_request_error', param: null, code: null } }));
        return;
      }
      const now = fault;
      fault = null;
      if (now?.kind === 'status') {
        res.writeHead(now.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: now.message, type: 'invalid_request_error', param: null, code: now.code ?? null } }));
        return;
      }
      const answer = (format === 'chat' ? chatAnswer : responsesAnswer)(json, ++count);
      if (json.stream !== true) {
        const text = JSON.stringify(answer.json);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': `req_fake${count}` }).end(text);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      if (now === null) {
        res.end(answer.events.join(''));
        return;
      }
      const head = answer.events.slice(0, now.after).join('');
      if (now.kind === 'error-event') {
        res.end(head + errorEvents(format, now.after));
        return;
      }
      // `break`: the events so far, flushed, then the connection dropped mid-body.
      res.write(head, () => setTimeout(() => res.socket?.destroy(), 20));
    });
  });
  const { port, sockets } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    failNext: (f) => void (fault = f),
    reset: () => {
      requests.length = 0;
      fault = null;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
