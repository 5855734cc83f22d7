/**
 * One worker's side of the protocol: receives frames from the front, runs
 * each call (parse → validate → route → provider adapter) and answers with
 * frames. Calls are independent and concurrent; a call keeps the routing
 * config it started with even when a reload swaps it mid-flight.
 */
import { wholePayload, type ChannelEnd, type FrameSender, type Payload } from '../protocol/channel.js';
import type { RoutingConfig } from '../protocol/config.js';
import type { CallFrame, FromWorker, HeaderList, RouteLabels, ToWorker, Usage } from '../protocol/frames.js';
import { GatewayError, isErrorCode, type ErrorCode } from '../protocol/errors.js';
import { ChurnMap } from '../protocol/churn-tables.js';
import { CallControl } from './call-control.js';
import { Flow } from './flow.js';
import { probeUpstream } from './probe.js';
import { readRequestBody, toParsedRequest, type RequestBody } from '../protocol/request-body.js';
import { Router } from './router.js';
import { PROVIDERS } from './providers/index.js';
import type { ResponseSink } from './providers/adapter.js';
import { ResponsesSink } from './inbound/responses/sink.js';

interface ActiveCall {
  readonly control: CallControl;
  readonly flow: Flow;
}

export class WorkerSession {
  readonly #port: FrameSender<FromWorker>;
  readonly #calls = new ChurnMap<number, ActiveCall>();
  #router: Router;

  /** `channel` is a worker thread's MessagePort end, or the in-thread end of GATEWAY_WORKERS=0. */
  constructor(channel: ChannelEnd<ToWorker, FromWorker>, routing: RoutingConfig) {
    this.#router = new Router(routing);
    this.#port = channel((frame, payload) => this.#onFrame(frame, payload));
  }

  #onFrame(frame: ToWorker, payload: Payload | undefined): void {
    switch (frame.t) {
      case 'call':
        // The body may be lent (read in place in shared memory, reused once this returns): it is parsed now.
        void this.#run(frame, parseBody(frame, payload));
        return;
      case 'cancel':
        this.#calls.get(frame.id)?.control.abort(CANCELLED);
        return;
      case 'pause':
        this.#calls.get(frame.id)?.flow.pause();
        return;
      case 'resume':
        this.#calls.get(frame.id)?.flow.resume();
        return;
      case 'config':
        this.#router = new Router(frame.routing);
        return;
      case 'ping':
        this.#port.send({ t: 'pong', id: frame.id });
        return;
      case 'probe':
        void probeUpstream(frame).then((result) => this.#port.send(result));
        return;
    }
  }

  async #run(frame: CallFrame, body: RequestBody | BadBody): Promise<void> {
    const { id } = frame;
    const router = this.#router;
    const call: ActiveCall = { control: new CallControl(), flow: new Flow() };
    this.#calls.set(id, call);
    const sink = new FrameSink(this.#port, id);
    // POST /v1/responses runs the chat path; `replies` translates what comes back (workers/inbound/responses/).
    let replies: ResponseSink = sink;
    try {
      if (body instanceof BadBody) throw body.error;
      const { json, plain } = body;
      // Only a body the hand checks do not pass needs the zod schema: zod is loaded then, once per thread.
      if (!plain) (await import('../protocol/requests.js')).checkWithSchema(frame.op, json);
      const request = toParsedRequest(frame.op, json);
      const responses = frame.op === 'responses' ? (replies = new ResponsesSink(sink, request.body)) : null;
      const target = router.resolve(request.model);
      sink.labels = target.labels;
      if (target.upstream.credentials.kind === 'missing') throw new GatewayError('credentials_missing');
      request.body.model = target.upstream.upstreamModel;
      const { op, body: sent } = responses?.attempt(target.upstream) ?? { op: frame.op, body: request.body };
      await PROVIDERS[target.upstream.provider].call(
        { op, upstream: target.upstream, body: sent, stream: request.stream, requestId: frame.requestId, maxResponseBytes: router.maxResponseBytes, control: call.control, flow: call.flow },
        replies,
      );
    } catch (err) {
      if (call.control.reason !== CANCELLED) replies.fail(toErrorData(err));
    } finally {
      this.#calls.delete(id);
    }
  }
}

/** Why a call's body could not be read; answered like any error of the call. */
class BadBody {
  constructor(readonly error: unknown) {}
}

function parseBody(frame: CallFrame, payload: Payload | undefined): RequestBody | BadBody {
  try {
    return readRequestBody(frame.op, wholePayload(payload));
  } catch (err) {
    return new BadBody(err);
  }
}

/** The abort reason of a call whose client went away: nothing is answered. */
const CANCELLED = Symbol('cancelled');

/** Turns a sink call into a frame, once the call is routed (so labels are known). */
class FrameSink implements ResponseSink {
  labels: RouteLabels = { model: 'unrouted', provider: 'none' };
  #done = false;

  constructor(
    readonly port: FrameSender<FromWorker>,
    readonly id: number,
  ) {}

  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void {
    if (this.#finish()) this.port.lend({ t: 'reply', id: this.id, status, contentType, headers, labels: this.labels, usage, upstreamMs }, body);
  }
  head(headers: HeaderList): void {
    if (!this.#done) this.port.send({ t: 'head', id: this.id, headers, labels: this.labels });
  }
  data(bytes: Payload): void {
    if (!this.#done) this.port.send({ t: 'data', id: this.id }, bytes);
  }
  end(usage: Usage | null, upstreamMs: number): void {
    if (this.#finish()) this.port.send({ t: 'end', id: this.id, usage, upstreamMs });
  }
  fail(error: { code: ErrorCode; message: string; events?: string }): void {
    if (this.#finish()) this.port.send({ t: 'fail', id: this.id, code: error.code, message: error.message, labels: this.labels, events: error.events });
  }
  #finish(): boolean {
    if (this.#done) return false;
    this.#done = true;
    return true;
  }
}

function toErrorData(err: unknown): { code: ErrorCode; message: string } {
  if (err instanceof GatewayError) return { code: err.code, message: err.message };
  const code = (err as { code?: unknown } | null)?.code;
  if (isErrorCode(code)) return { code, message: String((err as Error).message) };
  return { code: 'internal_error', message: 'internal gateway error' };
}
