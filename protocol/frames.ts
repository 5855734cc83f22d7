/**
 * The thread protocol: every message between the front thread and a provider
 * worker. Frames are small metadata records (msgpackr-encoded, see
 * frame-port.ts). Stream chunks travel beside them as transferred byte
 * buffers; a request body is copied once into a ring of shared memory and
 * parsed from there, a reply body likewise into another and written out
 * from there (shared-ring.ts). The records go through the same rings.
 *
 * A request's life, front → worker → front:
 *
 *   call ──▶ reply                                  (non-streamed answer or pass-through 4xx)
 *   call ──▶ head ─▶ data* ─▶ end | fail            (SSE stream)
 *   call ──▶ fail                                   (error before any byte)
 *   … then spans                                    (a sampled call, tracing on: its upstream attempts,
 *                                                    once the call is over in the worker, answered or cancelled)
 *   notice                                          (worker → front, any time: a routing event to log)
 *   fault                                           (worker → front: the cause of a call's internal_error, to log)
 *   cancel / pause / resume ──▶ (no answer)         (client left, client slow, client drained)
 *   ping ──▶ pong,  probe ──▶ probed                 (health checks)
 *   aws_chain ──▶ aws_chain_state                   (readiness: resolve the AWS credential chain now)
 *   aws_chain_state                                 (worker → front, any time: the chain's outcome changed)
 *   indexes ──▶ (no answer)                         (the prefix indexes of the config frame that follows;
 *                                                    shared memory, so sent with FrameSender.share)
 *
 * Bump PROTOCOL_VERSION on any incompatible change; both sides check it at attach.
 */
import type { ErrorCode } from './errors.js';
import type { MessagePort } from 'node:worker_threads';
import type { RoutingConfig, Upstream } from './config.js';
import type { ChannelEnd } from './channel.js';
import type { DeploymentStateMemory } from './deployment-state.js';
import type { DeploymentLimitsMemory } from './deployment-limits.js';
import type { PrefixIndexMemory } from './prefix-index.js';

export const PROTOCOL_VERSION = 11;

/**
 * The provider operations a worker serves. `responses` is the OpenAI
 * Responses API: passed through to a deployment that serves it, otherwise
 * run as `chat` through workers/inbound/responses/ (ARCHITECTURE.md,
 * "Inbound formats = translators too"). `messages` is Anthropic's Messages
 * API (CONTRACT.md, Anthropic Messages API (inbound)): passed through to a
 * deployment whose adapter speaks it (anthropic, Bedrock's Claude), otherwise
 * run as `chat` through workers/inbound/messages/; `count_tokens` its token
 * count, passed through to anthropic, counted locally otherwise.
 */
export type Operation = 'chat' | 'embeddings' | 'responses' | 'messages' | 'count_tokens';

/** The operations of Anthropic's Messages API: their errors and keepalives are Anthropic's. */
export const isMessagesOperation = (op: Operation): op is 'messages' | 'count_tokens' => op === 'messages' || op === 'count_tokens';

/** Token counts from a provider's `usage`, when it sent one. */
export interface Usage {
  readonly prompt: number;
  readonly completion: number;
}

/** Labels the front uses for metrics and logs; bounded: configured aliases and provider names only. */
export interface RouteLabels {
  /** The configured alias or `<provider>/*` for a route-rule match; `unrouted` before routing. */
  readonly model: string;
  readonly provider: string;
}

// ── front → worker ────────────────────────────────────────────────────────

/** Start a provider call; the request body travels as the frame's payload. */
export interface CallFrame {
  readonly t: 'call';
  readonly id: number;
  readonly op: Operation;
  readonly requestId: string;
  /** Only when tracing is on (CONTRACT.md, Tracing); absent otherwise, so an untraced call's frame is as it was. */
  readonly trace?: TraceContext;
  /** `x-switchyard-priority: sheddable` (or a negative integer): shed when every replica is saturated. Absent otherwise. */
  readonly sheddable?: true;
  /**
   * A Messages call's `anthropic-version` and `anthropic-beta` as the caller sent them (a flat
   * `[name, value, …]` list; a passthrough forwards them byte for byte); absent on every other call.
   */
  readonly headers?: HeaderList;
}

/**
 * The trace a call belongs to: the front made its server span; the worker makes each upstream
 * attempt's span id, sends it upstream as the `traceparent` parent and, when the call is sampled,
 * reports the attempt in a `spans` frame (docs/ARCHITECTURE.md, "Tracing").
 */
export interface TraceContext {
  /** 32 lowercase hex digits. */
  readonly traceId: string;
  /** The server span's id (16 hex digits): the parent of the attempt spans. */
  readonly spanId: string;
  /** The server span is sampled: the worker reports attempts and GenAI facts. Otherwise it only propagates. */
  readonly sampled: boolean;
  /** The caller's `tracestate`, sent upstream as it came; '' when none. */
  readonly state: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: the facts include the messages. */
  readonly content: boolean;
}
export interface CancelFrame { readonly t: 'cancel'; readonly id: number }
export interface PauseFrame { readonly t: 'pause'; readonly id: number }
export interface ResumeFrame { readonly t: 'resume'; readonly id: number }
/** Swap the routing config whole; calls already running keep the one they started with. */
export interface ConfigFrame { readonly t: 'config'; readonly routing: RoutingConfig }
export interface PingFrame { readonly t: 'ping'; readonly id: number }
/** Reachability check of one upstream: its provider's free probe (a model list), never a billable call. */
export interface ProbeFrame {
  readonly t: 'probe';
  readonly id: number;
  readonly upstream: ProbeTarget;
  readonly timeoutMs: number;
}

/** What a probe needs of a route: its provider, where it is, its key and settings. */
export type ProbeTarget = Omit<Upstream, 'upstreamModel'>;

/**
 * Resolve the standard AWS credential chain of a region now (bedrock deployments whose
 * Credentials are `aws_chain`), so that readiness can count them before any call: the worker
 * loads the AWS packages if it had not, and answers with an `aws_chain_state` of the same id.
 */
export interface AwsChainFrame {
  readonly t: 'aws_chain';
  readonly id: number;
  readonly region: string;
}

/**
 * The prefix index of every deployment with server_metrics (protocol/prefix-index.ts), by deployment id:
 * all of them, for the config frame that follows (CONTRACT.md, Inference-aware routing: one index per
 * replica, shared by every worker thread). A SharedArrayBuffer cannot be packed, so this frame goes by
 * FrameSender.share, which keeps its place among the frames: it always arrives before the config that
 * needs it. A surviving id keeps its memory, so its index survives the swap.
 */
export interface IndexesFrame {
  readonly t: 'indexes';
  readonly indexes: IndexGrant;
}

/** Prefix index memories by deployment id. */
export type IndexGrant = Readonly<Record<string, PrefixIndexMemory>>;

export type ToWorker = CallFrame | CancelFrame | PauseFrame | ResumeFrame | ConfigFrame | PingFrame | ProbeFrame | AwsChainFrame | IndexesFrame;

/**
 * What the front needs of a worker session to run one on its own thread (GATEWAY_WORKERS=0):
 * workers/session.ts's class, loaded by the pool's one dynamic import of workers/.
 */
export type SessionConstructor = new (channel: ChannelEnd<ToWorker, FromWorker>, routing: RoutingConfig, state: WorkerState) => unknown;

/** The shared deployment state (protocol/deployment-state.ts), the prefix indexes of now, and which worker of the pool this session is. */
export interface WorkerState {
  readonly memory: DeploymentStateMemory;
  /** rpm and tpm per deployment, by the same slots (protocol/deployment-limits.ts). */
  readonly limits: DeploymentLimitsMemory;
  readonly worker: number;
  /** The prefix indexes of the routing config handed with this state; later ones come in `indexes` frames. */
  readonly indexes: IndexGrant;
}

// ── worker → front ────────────────────────────────────────────────────────

/** Flat `[name, value, name, value, …]` list of headers the front may return (already allowlisted). */
export type HeaderList = readonly string[];

/**
 * Who served a routed answer, for the x-switchyard-* headers, the access log and the routing metrics
 * (CONTRACT.md, Routing for high volume). On a failure, the deployment tried last.
 */
export interface RoutingFacts {
  /** The deployment id; null when none was tried (503 no_deployment_available, or not routed). */
  readonly deployment: string | null;
  /** Attempts made, the last included; 0 when none was. */
  readonly attempts: number;
  /** The fallback group that served, null when the requested group did. */
  readonly fallback: string | null;
  /**
   * Milliseconds the attempts spent waiting on upstreams before this answer could start: each
   * failed attempt from its request sent to its failure, the serving one to its answer read (a
   * stream: to its first content). The front subtracts it to give `x-switchyard-overhead-ms`.
   */
  readonly waitedMs: number;
  /** The waits before attempts (a provider's Retry-After, router_settings.retry_after); null when there was none. Included in `waitedMs`. */
  readonly backoff: Backoff | null;
  /**
   * An inference-aware pick (a group with server_metrics) of the deployment named: why it was chosen and its
   * prefix score, for switchyard_inference_picks_total and _prefix_match_ratio. Absent for every other pick,
   * so their frames are as they were.
   */
  readonly inference?: InferencePick;
}

/** CONTRACT.md, Inference-aware routing, Visible: the `reason` of switchyard_inference_picks_total. */
export type InferenceReason = 'prefix' | 'load' | 'all_saturated' | 'no_metrics';

export interface InferencePick {
  readonly reason: InferenceReason;
  /** The chosen deployment's prefix score: the share of the prompt's leading blocks its index held, 0..1. */
  readonly ratio: number;
}

/** How long a request waited before its attempts, in all, and why it last did (`429 Retry-After from east`). */
export interface Backoff {
  readonly ms: number;
  readonly reason: string;
}

/**
 * What a sampled call's worker adds to its server span, as `[name, value, name, value, …]`: the
 * GenAI attributes it alone can read (the request's model and parameters, the answer's model, id
 * and finish reasons, the messages when captured). Names from protocol/genai.ts.
 */
export type SpanFacts = readonly (string | number | boolean | readonly string[])[];

/** A whole answer; the body is the payload. */
export interface ReplyFrame extends RoutingFacts {
  readonly t: 'reply';
  readonly id: number;
  readonly status: number;
  readonly contentType: string;
  readonly headers: HeaderList;
  readonly labels: RouteLabels;
  readonly usage: Usage | null;
  readonly upstreamMs: number;
  /** A sampled call only. */
  readonly trace?: SpanFacts;
}
/** The upstream answered 200 to a stream: the front sends its status line and headers. */
export interface HeadFrame extends RoutingFacts {
  readonly t: 'head';
  readonly id: number;
  readonly headers: HeaderList;
  readonly labels: RouteLabels;
}
/** One or more whole SSE events, ready to write; the bytes are the payload. */
export interface DataFrame { readonly t: 'data'; readonly id: number }
/** The stream finished well. */
export interface EndFrame {
  readonly t: 'end';
  readonly id: number;
  readonly usage: Usage | null;
  readonly upstreamMs: number;
  /** A sampled call only. */
  readonly trace?: SpanFacts;
}
/** The call failed: before a head, the front answers with the error; after it, with one SSE error event. */
export interface FailFrame extends RoutingFacts {
  readonly t: 'fail';
  readonly id: number;
  readonly code: ErrorCode;
  readonly message: string;
  /** Known once routing has happened. */
  readonly labels: RouteLabels | null;
  /** Headers for the error answer: the provider's allowlisted ones (Retry-After), or the gateway's own. */
  readonly headers: HeaderList;
  /**
   * The SSE events that end a stream failing after its head, when the operation has its own
   * (the Responses API's `error` and `response.failed`); absent: the front writes the compatible
   * `data: {"error":…}` event.
   */
  readonly events?: string;
  /** A sampled call only. */
  readonly trace?: SpanFacts;
}
export interface PongFrame { readonly t: 'pong'; readonly id: number }
/** The answer to a probe: the HTTP status the upstream gave, or why there was none. */
export interface ProbedFrame {
  readonly t: 'probed';
  readonly id: number;
  readonly status: number | null;
  readonly error: string | null;
}

/** A routing event for the front's log: a deployment began a cooldown, or a provider refused the gateway's credentials. */
export interface NoticeFrame extends RoutingNotice {
  readonly t: 'notice';
}

export interface RoutingNotice {
  readonly event: 'deployment_cooled' | 'upstream_auth_failed';
  readonly model: string;
  readonly deployment: string;
  readonly code: string;
  readonly status: number;
  readonly cooldownMs: number;
  /** The provider's text with key-like strings redacted; never sent to a caller. */
  readonly detail: string | null;
}

/**
 * What went wrong inside a worker when a call is answered 500 `internal_error`: the caller gets
 * the generic message, the log gets this, under the request's id.
 */
export interface FaultFrame {
  readonly t: 'fault';
  readonly requestId: string;
  /** The error's name and message, key-like strings redacted. */
  readonly error: string;
  /** Its stack, likewise redacted; null when it had none. */
  readonly stack: string | null;
}

/**
 * What a worker's AWS credential chain of a region last gave: sent when it changes (credentials
 * first produced, refreshed, failed, recovered), never per request, and as the answer to an
 * `aws_chain` frame (`id`; 0 when unasked). No secret: the expiry, the SDK provider that served,
 * or the failure's message, which names the sources tried, key-like strings redacted.
 */
export interface AwsChainStateFrame {
  readonly t: 'aws_chain_state';
  readonly id: number;
  readonly region: string;
  readonly state: 'ok' | 'failed';
  /** Epoch ms when the credentials expire; null when they do not (or on failure). */
  readonly expiresAt: number | null;
  /** The SDK provider that produced them, as the SDK names it (`fromTokenFile`, `fromHttp/fromContainerMetadata`…); null on failure. */
  readonly source: string | null;
  /** Why the chain gave none, naming each source it tried and its reason; null when ok. */
  readonly error: string | null;
  /** The names alone of the sources the failed chain tried, in order (`fromEnv`, …); empty when ok. */
  readonly tried: readonly string[];
}

/** A sampled call's upstream attempts, sent once the call is over in the worker; the front makes one CLIENT span of each. */
export interface SpansFrame {
  readonly t: 'spans';
  readonly traceId: string;
  /** The server span's id. */
  readonly parentId: string;
  readonly state: string;
  readonly attempts: readonly AttemptSpan[];
}

/** One upstream attempt as its span needs it; times are epoch milliseconds (performance.timeOrigin + now: one clock on every thread). */
export interface AttemptSpan {
  /** Made by the worker and sent upstream in the attempt's `traceparent`. */
  readonly spanId: string;
  readonly deployment: string;
  /** 1 for the first attempt of the request. */
  readonly attempt: number;
  /** `gen_ai.operation.name` of what was sent (a Responses call translated to chat is `chat`). */
  readonly operation: 'chat' | 'embeddings';
  readonly provider: string;
  /** The upstream model id the attempt asked for. */
  readonly model: string;
  /** The upstream's host and port; null for a provider with no network (mock). */
  readonly address: string | null;
  readonly port: number;
  readonly start: number;
  readonly end: number;
  /** The HTTP status the upstream answered; 0 when none (a connection error, a timeout). */
  readonly status: number;
  /** The failure's error code; null when the attempt served the answer. */
  readonly error: string | null;
  /** The wait just before this attempt (a provider's Retry-After, router_settings.retry_after); null when none. */
  readonly backoff: Backoff | null;
  /** A stream's first content from the upstream; 0 when none. */
  readonly firstChunk: number;
}

export type FromWorker = ReplyFrame | HeadFrame | DataFrame | EndFrame | FailFrame | PongFrame | ProbedFrame | NoticeFrame | FaultFrame | SpansFrame | AwsChainStateFrame;

/**
 * Posted by a worker to piscina's parent port once it is attached (piscina emits it as the pool's
 * 'message' event): which slot's worker runs on which thread, so that the front can stop a thread
 * that stops answering. Not a frame: a frame waits for its port's batch, which a worker that hangs
 * at its first call never sends.
 */
export interface WorkerHello {
  readonly t: 'switchyard.hello';
  readonly worker: number;
  readonly thread: number;
}

/** The data a front thread hands a worker when it attaches to it (a piscina task). */
export interface AttachTask {
  readonly protocol: number;
  readonly port: MessagePort;
  /** The shared ring (protocol/shared-ring.ts) the worker lends reply bodies through. */
  readonly replies: SharedArrayBuffer;
  /** The shared ring the front lends request bodies through. */
  readonly calls: SharedArrayBuffer;
  readonly routing: RoutingConfig;
  readonly state: WorkerState;
}
