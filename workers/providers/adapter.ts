/**
 * The provider adapter interface: one `call` is ONE attempt on one
 * deployment. Its success goes to the sink, exactly once as `reply`, or as
 * `head`, any number of `data`, then `end`; its failure is thrown: an
 * AttemptFailure (workers/routing/failure.ts) for a provider answer it
 * classified, or any error for the rest. The attempt loop
 * (workers/routing/attempts.ts) decides from it whether to retry, fall
 * back or answer; an adapter never answers the caller itself.
 */
import type { Payload } from '../../protocol/channel.js';
import type { Upstream } from '../../protocol/config.js';
import type { HeaderList, Operation, ProbeTarget, Usage } from '../../protocol/frames.js';
import type { CallControl } from '../call-control.js';
import type { Flow } from '../flow.js';

/**
 * Anthropic's `thinking` as the adapters read it (CONTRACT.md, Anthropic Messages API (inbound):
 * "`thinking` becomes the provider's own reasoning control where the translating adapter has
 * one"): a budget of reasoning tokens (`enabled`), the model's own choice (`adaptive`,
 * `between_tools`, and types added later), or none. `shown`: the reasoning text comes back as
 * `thinking` blocks (Anthropic's `display: "omitted"` asks for none).
 */
export type Thinking =
  | { readonly type: 'budget'; readonly budgetTokens: number; readonly shown: boolean }
  | { readonly type: 'adaptive'; readonly shown: boolean }
  | { readonly type: 'disabled' };

/** Whether a provider's reasoning text is asked for and becomes `thinking` blocks (CONTRACT.md: "only when the request enabled thinking"). */
export const showsThinking = (thinking: Thinking | null | undefined): boolean => thinking !== null && thinking !== undefined && thinking.type !== 'disabled' && thinking.shown;

export interface ProviderCall {
  readonly op: Operation;
  readonly upstream: Upstream;
  /** The request body with `model` already rewritten to the upstream id. */
  readonly body: Record<string, unknown>;
  /**
   * The caller's headers a passthrough forwards (a Messages call's `anthropic-version` and
   * `anthropic-beta`, as a flat list); empty for every other call.
   */
  readonly headers: HeaderList;
  /**
   * Top-level body parameters the caller did not ask for by name but a translation derived (a
   * Messages call's `parallel_tool_calls: false`, from an Anthropic-only hint): an adapter with no
   * equivalent drops them as `drop_params` would, never a 400. Absent: none.
   */
  readonly droppable?: ReadonlySet<string>;
  /**
   * A Messages call's `thinking`, which no chat parameter carries: an adapter with a reasoning
   * control of its own (gemini's thinkingConfig) maps it, every other ignores it. Absent: the
   * caller did not say (and every chat call).
   */
  readonly thinking?: Thinking;
  readonly stream: boolean;
  readonly requestId: string;
  /** limits.max_response_body_bytes of the config the call started with. */
  readonly maxResponseBytes: number;
  /**
   * Stops this attempt when the client leaves or the request's time is up
   * (the adapter stops; the loop answers or not), or when one of the
   * attempt's own deadlines passes: the adapter calls `control.abort` with
   * the deadline's GatewayError, which is then the reason.
   */
  readonly control: CallControl;
  readonly flow: Flow;
  /** What is left of the whole request's time: the attempt's total deadline is at most this. */
  readonly budgetMs: number;
  /** performance.now() when the response headers arrived, set by the adapter: the latency sample of an answer that is not a stream. */
  headersAt: number;
  /** performance.now() when the request went to the upstream (set by the adapter; 0: never sent). */
  sentAt: number;
  /** performance.now() when an answer that is not a stream was read whole, before any translation (set by the adapter). */
  readAt: number;
  /** Tracing on: the W3C `traceparent` of this attempt's span, sent upstream; null when tracing is off. */
  readonly traceparent: string | null;
  /** The caller's `tracestate`, sent upstream with the traceparent; '' for none. */
  readonly tracestate: string;
}

/** Where an attempt's success goes. */
export interface AttemptSink {
  /** `body`: a buffer the sink may keep, or an upstream body's pieces as read (see Payload in protocol/channel.ts). */
  reply(status: number, contentType: string, headers: HeaderList, body: Payload, usage: Usage | null, upstreamMs: number): void;
  head(headers: HeaderList): void;
  /**
   * Whole SSE events, ready to write: a buffer the sink may keep, or pieces only read (see Payload).
   * Throws when the events end the attempt (an error event before the stream's first content).
   * `content`: whether the stream so far carries content, when the adapter made its events itself
   * (a translator knows, and never writes an error event); absent, the commit gate reads them.
   */
  data(bytes: Payload, content?: boolean): void;
  end(usage: Usage | null, upstreamMs: number): void;
}

export interface ProviderAdapter {
  call(call: ProviderCall, sink: AttemptSink): Promise<void>;
}

/** A provider's free health probe (CONTRACT.md: health checks that cost nothing): a GET no provider bills for. */
export interface ProbeRequest {
  /** After the api_base's own path, query included. */
  readonly path: string;
  readonly headers: Record<string, string>;
}

/** One registry entry (workers/providers/index.ts): the adapter and its probe. */
export interface Provider extends ProviderAdapter {
  /** The probe request for a route of this provider (a promise when it must be signed); null when it has nothing to reach (mock). */
  probe(target: ProbeTarget): ProbeRequest | null | Promise<ProbeRequest | null>;
  /**
   * Whether the deployment takes Anthropic's Messages API as it is (CONTRACT.md, Anthropic Messages
   * API (inbound): anthropic, and bedrock for a model id with `anthropic.`): the adapter then serves
   * the `messages` operation itself, a passthrough; absent or false, a Messages call reaches it
   * translated to chat (workers/inbound/messages/).
   */
  speaksMessages?(upstream: Upstream): boolean;
}
