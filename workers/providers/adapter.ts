/**
 * The provider adapter interface: one `call` per request. An adapter answers
 * through the sink exactly once with `reply` or `fail`, or with `head`,
 * any number of `data`, then `end` or `fail`.
 */
import type { Payload } from '../../protocol/channel.js';
import type { Upstream } from '../../protocol/config.js';
import type { HeaderList, Operation, Usage } from '../../protocol/frames.js';
import type { ErrorCode } from '../../protocol/errors.js';
import type { CallControl } from '../call-control.js';
import type { Flow } from '../flow.js';

export interface ProviderCall {
  readonly op: Operation;
  readonly upstream: Upstream;
  /** The request body with `model` already rewritten to the upstream id. */
  readonly body: Record<string, unknown>;
  readonly stream: boolean;
  readonly requestId: string;
  /** limits.max_response_body_bytes of the config the call started with. */
  readonly maxResponseBytes: number;
  /**
   * Stops when the client leaves (the adapter stops and answers nothing) or
   * a deadline passes: the adapter calls `control.abort` with the deadline's
   * GatewayError, which is then the reason.
   */
  readonly control: CallControl;
  readonly flow: Flow;
}

export interface ResponseSink {
  /** `body`: a buffer the sink may keep, or an upstream body's pieces as read (see Payload in protocol/channel.ts). */
  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void;
  head(headers: HeaderList): void;
  /** Whole SSE events, ready to write: a buffer the sink may keep, or pieces only read (see Payload). */
  data(bytes: Payload): void;
  end(usage: Usage | null, upstreamMs: number): void;
  /**
   * `events`: how a stream that fails after its head ends, when the operation has its own
   * form (workers/inbound/responses/); adapters leave it out (see FailFrame in protocol/frames.ts).
   */
  fail(error: { code: ErrorCode; message: string; events?: string }): void;
}

export interface ProviderAdapter {
  call(call: ProviderCall, sink: ResponseSink): Promise<void>;
}
