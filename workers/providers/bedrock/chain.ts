/**
 * The standard AWS credential chain, for a bedrock deployment with no
 * credentials of its own and none in the environment (Credentials kind
 * `aws_chain`; CONTRACT.md, Native providers): the SDK's own chain,
 * `@aws-sdk/credential-provider-node`'s defaultProvider (environment, SSO,
 * shared config and credentials files and profiles, credential_process, a
 * web identity token file as EKS IRSA mounts it, container credentials as
 * ECS and EKS Pod Identity serve them, instance metadata), which memoizes
 * what it got and fetches new credentials within 5 minutes of their expiry.
 * No hand-written STS or IMDS client.
 *
 * One chain per region per thread (the region is the STS region of a web
 * identity or an assumed role), made on its first use, which imports the
 * package (import()): a worker, or an inline front, that serves no such
 * deployment never loads it (test/module-graph.test.ts). The signer asks
 * it for an identity at every signature (aws.ts, chainSigner).
 *
 * The SDK's own failure says only "Could not load credentials from any
 * providers". Its debug lines say which source it tried and why each gave
 * nothing: a logger records them, and a failure's message is made of them
 * (`sourcesTried`), so it names the sources as the SDK does, with no list
 * kept here; key-like strings are redacted. That message is the call's
 * 502 `upstream_credentials_unavailable`, and goes to the front when it
 * changes (AwsChainStateFrame), as do credentials first produced or
 * refreshed: the front's readiness, status and log read it from there.
 */
import type { AwsChainStateFrame } from '../../../protocol/frames.js';
import { GatewayError } from '../../../protocol/errors.js';

/** Credentials as the chain hands them out; `expiration` absent for long-term keys (a profile's). */
export interface ChainIdentity {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/** What a chain last gave, as the front learns it (AwsChainStateFrame without its frame fields). */
export type ChainOutcome = Omit<AwsChainStateFrame, 't' | 'id'>;

/** The logger the SDK's providers write to (its `Logger`: they call `debug`, and `warn` for a misconfiguration). */
interface ChainLogger {
  trace(...content: unknown[]): void;
  debug(...content: unknown[]): void;
  info(...content: unknown[]): void;
  warn(...content: unknown[]): void;
  error(...content: unknown[]): void;
}

type IdentityProvider = () => Promise<ChainIdentity>;
type DefaultProvider = (init: { logger: ChainLogger; clientConfig: { region: string } }) => IdentityProvider;

/** Lines kept of the runs under way (a run logs about 20); older ones are dropped. */
const MAX_LINES = 200;
/** A source's reason is cut here; the whole message there. */
const MAX_REASON = 300;
const MAX_MESSAGE = 2000;

let loading: Promise<DefaultProvider> | null = null;
const chains = new Map<string, RegionChain>();
let listener: ((outcome: ChainOutcome) => void) | null = null;

/**
 * Where outcomes go (the worker session's port). One chain serves the whole thread, so the
 * session that started last is told; a thread runs one session (tests may start more).
 */
export function onChainOutcome(to: (outcome: ChainOutcome) => void): void {
  listener = to;
}

/** A region's chain, made on first use (and the package imported then). */
export function regionChain(region: string): RegionChain {
  let chain = chains.get(region);
  if (chain === undefined) {
    chain = new RegionChain(region, (loading ??= importDefaultProvider()));
    chains.set(region, chain);
  }
  return chain;
}

/** The SDK's defaultProvider, imported (exported for the tests, which make chains of their own). */
export async function importDefaultProvider(): Promise<DefaultProvider> {
  // A CommonJS package: its exports by name from Node, only as `default` from a chunk esbuild split off.
  type Exports = { readonly defaultProvider: DefaultProvider };
  const module = (await import('@aws-sdk/credential-provider-node')) as unknown as Exports & { readonly default?: Exports };
  return (module.default ?? module).defaultProvider;
}

/** One region's chain in this thread: the SDK's memoized provider, what it logged, what was last reported. */
export class RegionChain {
  readonly region: string;
  readonly #provider: Promise<IdentityProvider>;
  readonly #lines: string[] = [];
  /** The name of the chain's first source, as the SDK first logged it: a line naming it starts a run. */
  #first: string | null = null;
  /** The identity object, or the failure message, last reported (the SDK hands out the same object until it refreshes). */
  #reported: ChainIdentity | string | null = null;
  #source: string | null = null;
  /** The sources the last failure tried. */
  #tried: readonly string[] = [];

  constructor(region: string, load: Promise<DefaultProvider>) {
    this.region = region;
    const logger = this.#logger();
    this.#provider = load.then((defaultProvider) => defaultProvider({ logger, clientConfig: { region } }));
  }

  /**
   * The chain's credentials now (the SDK's cached ones, or new ones when they are near their
   * expiry). Throws GatewayError `upstream_credentials_unavailable` naming the sources tried.
   */
  async identity(): Promise<ChainIdentity> {
    const provider = await this.#provider;
    let identity: ChainIdentity;
    try {
      identity = await provider();
    } catch (err) {
      const { message, tried } = sourcesTried(this.#lines.splice(0), err);
      if (this.#reported !== message) {
        this.#reported = message;
        this.#tried = tried;
        listener?.({ region: this.region, state: 'failed', expiresAt: null, source: null, error: message, tried });
      }
      throw new GatewayError('upstream_credentials_unavailable', message);
    }
    if (identity !== this.#reported) {
      this.#reported = identity;
      // The run that produced them ended with the source that served.
      this.#source = lastSource(this.#lines) ?? this.#source;
      listener?.(this.#ok(identity));
    }
    return identity;
  }

  /** The outcome of asking the chain now, never thrown (an `aws_chain` frame's answer). */
  async resolve(): Promise<ChainOutcome> {
    try {
      return this.#ok(await this.identity());
    } catch (err) {
      return { region: this.region, state: 'failed', expiresAt: null, source: null, error: (err as Error).message, tried: this.#tried };
    }
  }

  #ok(identity: ChainIdentity): ChainOutcome {
    return { region: this.region, state: 'ok', expiresAt: identity.expiration?.getTime() ?? null, source: this.#source, error: null, tried: [] };
  }

  #logger(): ChainLogger {
    const record = (...content: unknown[]) => {
      const line = content.map((c) => (typeof c === 'string' ? c : c instanceof Error ? c.message : String(c))).join(' ');
      const source = SOURCE.exec(line)?.[1];
      if (source !== undefined) {
        this.#first ??= source;
        if (source === this.#first) this.#lines.length = 0;
      }
      this.#lines.push(line);
      if (this.#lines.length > MAX_LINES) this.#lines.splice(0, this.#lines.length - MAX_LINES);
    };
    return { trace: record, debug: record, info: record, warn: record, error: record };
  }
}

/** `@aws-sdk/credential-provider-node - defaultProvider::fromTokenFile`: the chain tries a source. */
const SOURCE = /defaultProvider::(\w+)/;
/** `… - remoteProvider::fromHttp/fromContainerMetadata`: which remote source it is. */
const REMOTE = /remoteProvider::(\S+)/;
/** `@smithy/property-provider -> Web identity configuration not specified`: why a source gave nothing. */
const REASON = /@smithy\/property-provider -> ([\s\S]*)$/;
/** `@smithy/property-provider (!) Could not load credentials from any providers`: the chain's own end. */
const END = /@smithy\/property-provider \(!\) /;

interface Tried {
  source: string;
  reason: string | null;
}

/** The sources one run of the chain tried, in order, each with the SDK's first word on why it gave nothing. */
function triedIn(lines: readonly string[]): Tried[] {
  const tried: Tried[] = [];
  for (const line of lines) {
    const source = SOURCE.exec(line)?.[1];
    const last = tried.at(-1);
    if (source !== undefined) tried.push({ source, reason: null });
    else if (last === undefined || END.test(line)) continue;
    else if (REMOTE.test(line)) last.source = REMOTE.exec(line)?.[1] ?? last.source;
    else if (last.reason === null) last.reason = REASON.exec(line)?.[1] ?? null;
  }
  return tried;
}

const lastSource = (lines: readonly string[]): string | null => triedIn(lines).at(-1)?.source ?? null;

/**
 * A failed run as one line: the sources the SDK says it tried, each with its reason; a source that
 * stopped the chain with an error of its own (an STS refusal, an endpoint that refused the token)
 * has that error as its reason. `tried`: the sources' names alone, in order.
 *
 * @example
 * sourcesTried(lines, err).message
 * // the AWS credential chain gave no credentials; tried fromEnv (Unable to find environment variable credentials), …, remoteProvider (EC2 Instance Metadata Service access disabled)
 */
export function sourcesTried(lines: readonly string[], err: unknown): { readonly message: string; readonly tried: readonly string[] } {
  const tried = triedIn(lines);
  const error = err instanceof Error ? err : new Error(String(err));
  const last = tried.at(-1);
  if (last !== undefined && last.reason === null && !/from any providers/.test(error.message)) last.reason = `${error.name}: ${error.message}`;
  const list = tried.map(({ source, reason }) => (reason === null ? source : `${source} (${tidy(reason)})`)).join(', ');
  const text = list === '' ? `the AWS credential chain gave no credentials: ${tidy(`${error.name}: ${error.message}`)}` : `the AWS credential chain gave no credentials; tried ${list}`;
  return { message: text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 1)}…` : text, tried: tried.map((t) => t.source) };
}

/** One reason on one line, cut short, without its final full stop, secrets redacted. */
function tidy(reason: string): string {
  const line = redactCredentials(reason.replace(/\s+/g, ' ').trim()).replace(/\.$/, '');
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON - 1)}…` : line;
}

/**
 * Key-like strings out of a chain's text: AWS access key ids, bearer tokens, and long opaque runs
 * (a secret key, a session token, a JWT) that have a digit or base64's `+` or `=` in them.
 * workers/routing/failure.ts's redactKeys would also cut a message at 500 characters (the later
 * sources with it) and redact words such as `configuration/credentials`, which have neither.
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b(?:AKIA|ASIA|AROA|AIDA|ABIA|ACCA)[A-Z0-9]{12,}\b/g, '[redacted]')
    .replace(/(bearer\s+)\S+/gi, '$1[redacted]')
    .replace(/[A-Za-z0-9_\-+/=.]{24,}/g, (run) => (/[\d+=]/.test(run) ? '[redacted]' : run));
}
