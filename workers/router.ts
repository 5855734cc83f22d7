/**
 * Model name → group of deployments. An alias of `model_list` is a group
 * (CONTRACT.md, Routing for high volume); otherwise a provider-qualified
 * name (`openai/gpt-4.1`) is routed by the first `route_rules` entry of
 * that provider whose glob matches the upstream id, as a group of one
 * deployment that keeps no state. The caller's model name only ever
 * becomes the `model` field of the forwarded body: the host is always the
 * configured `api_base`, so a name like `openai/../../evil` or
 * `openai/http://x` cannot steer a request.
 */
import type { RouterSettings, RoutingConfig, Upstream } from '../protocol/config.js';
import type { PrefixIndex } from '../protocol/prefix-index.js';
import type { RouteLabels } from '../protocol/frames.js';
import { GatewayError } from '../protocol/errors.js';
import { groupsOf, leadRoute } from '../protocol/routing-groups.js';
import type { DeploymentLimits } from '../protocol/deployment-limits.js';

export interface Deployment {
  readonly id: string;
  readonly upstream: Upstream;
  /** Its slot in the shared deployment state; -1 for a route-rule target, which keeps none. */
  readonly slot: number;
  readonly weight: number;
  readonly order: number;
  /** max_parallel_requests; 0 for none. */
  readonly cap: number;
  /** rpm and tpm (0: none); the pod's limits view when either is set, else null (protocol/deployment-limits.ts). */
  readonly rpm: number;
  readonly tpm: number;
  readonly limits: DeploymentLimits | null;
  /** Its group's name and its provider: the labels of the requests it serves. */
  readonly labels: RouteLabels;
  /** A deployment with server_metrics: its prefix index, shared by every thread (protocol/prefix-index.ts); else null. */
  readonly index: PrefixIndex | null;
}

export class Group {
  readonly name: string;
  /** The deployments with credentials, lowest order first (config order within an order). */
  readonly deployments: readonly Deployment[];
  readonly lone: boolean;
  readonly timeoutMs: number;
  /** The labels of a request no deployment served (a group whose replicas DNS has not given yet has none). */
  readonly labels: RouteLabels;
  fallbacks: readonly Group[] = [];
  contextWindowFallbacks: readonly Group[] = [];
  /** This group, then its fallbacks: the groups a request for it tries in turn. */
  chain: readonly Group[] = [this];
  /** Where ties start being looked at, turned on every pick, so equal deployments share the load. */
  cursor = 0;
  /** Per pick: deployments refused on reservation (another thread was faster). Reused: a pick allocates nothing. */
  readonly refused: Uint8Array;
  /** Some deployment has server_metrics: `inference-aware` scores this group (pick.ts); otherwise it is least-busy. */
  readonly inference: boolean;
  /** Per inference-aware pick: each deployment's prefix score, then its score. Reused like `refused`. */
  readonly scores: Float64Array;
  /**
   * A request for this group hashes its prompt (the strategy is inference-aware, and this group or a
   * fallback has server_metrics); set by the Router with the chain. A group that never does pays nothing.
   */
  hashesPrompt = false;

  constructor(name: string, deployments: Deployment[], lone: boolean, timeoutMs: number, labels: RouteLabels) {
    this.name = name;
    this.labels = labels;
    this.deployments = deployments.sort((a, b) => a.order - b.order);
    this.lone = lone;
    this.timeoutMs = timeoutMs;
    this.refused = new Uint8Array(deployments.length);
    this.inference = deployments.some((d) => d.index !== null);
    this.scores = new Float64Array(this.inference ? deployments.length : 0);
  }
}

interface CompiledRule {
  readonly index: number;
  readonly provider: string;
  readonly patterns: readonly RegExp[];
  readonly base: Omit<Upstream, 'upstreamModel'>;
}

export class Router {
  readonly #groups = new Map<string, Group>();
  /** Groups whose every deployment is missing credentials: 503 credentials_missing. */
  readonly #uncredentialed = new Set<string>();
  readonly #rules: CompiledRule[];
  readonly maxResponseBytes: number;
  readonly settings: RouterSettings;
  /** Some group hashes its requests' prompts (Group.hashesPrompt): the session loads the hasher. */
  readonly hashesPrompts: boolean;

  /**
   * `limits`: the pod's rpm/tpm view (null: limits are not kept, as in tests of routing alone);
   * `indexOf`: the prefix index of a deployment id with server_metrics (the session's, from the `indexes` frames).
   */
  constructor(routing: RoutingConfig, limits: DeploymentLimits | null = null, indexOf: (id: string) => PrefixIndex | null = () => null) {
    this.maxResponseBytes = routing.maxResponseBodyBytes;
    this.settings = routing.router;
    const specs = groupsOf(routing);
    for (const spec of specs.values()) {
      const deployments: Deployment[] = [];
      spec.deployments.forEach((route, i) => {
        if (route.credentials.kind === 'missing') return;
        const slot = spec.slots[i] ?? -1;
        const limited = slot >= 0 && (route.rpm > 0 || route.tpm > 0) ? limits : null;
        const index = route.serverMetrics === null ? null : indexOf(route.id);
        deployments.push({ id: route.id, upstream: route, slot, weight: route.weight, order: route.order, cap: route.maxParallel, rpm: route.rpm, tpm: route.tpm, limits: limited, labels: { model: route.alias, provider: route.provider }, index });
      });
      // A group whose replicas DNS has not given yet is routed, empty: 503 no_deployment_available (unless their key is missing).
      if (deployments.length === 0 && !spec.replicaSets.some((set) => set.entry.credentials.kind !== 'missing')) this.#uncredentialed.add(spec.name);
      else {
        const lead = leadRoute(spec);
        this.#groups.set(spec.name, new Group(spec.name, deployments, spec.lone, spec.timeoutMs, { model: lead.alias, provider: lead.provider }));
      }
    }
    for (const spec of specs.values()) {
      const group = this.#groups.get(spec.name);
      if (!group) continue;
      group.fallbacks = this.#known(spec.fallbacks);
      group.contextWindowFallbacks = this.#known(spec.contextWindowFallbacks);
      group.chain = [group, ...group.fallbacks];
      group.hashesPrompt = this.settings.strategy === 'inference-aware' && group.chain.some((g) => g.inference);
    }
    this.hashesPrompts = [...this.#groups.values()].some((g) => g.hashesPrompt);
    this.#rules = routing.rules.map(({ patterns, ...base }, index) => ({ index, provider: base.provider, patterns: patterns.map(globToRegExp), base }));
  }

  /** Throws `model_not_found` when neither an alias nor a rule routes the name, `credentials_missing` when no deployment of it has its key. */
  resolve(model: string): Group {
    const group = this.#groups.get(model);
    if (group) return group;
    if (this.#uncredentialed.has(model)) throw new GatewayError('credentials_missing');
    const slash = model.indexOf('/');
    if (slash > 0) {
      const provider = model.slice(0, slash);
      const id = model.slice(slash + 1);
      const rule = this.#rules.find((r) => r.provider === provider && r.patterns.some((p) => p.test(id)));
      if (rule && id.length > 0) {
        if (rule.base.credentials.kind === 'missing') throw new GatewayError('credentials_missing');
        const deployment: Deployment = {
          id: `route_rules[${rule.index}]`,
          upstream: { ...rule.base, upstreamModel: id },
          slot: -1,
          weight: 1,
          order: 1,
          cap: 0,
          rpm: 0,
          tpm: 0,
          limits: null,
          labels: { model: `${provider}/*`, provider },
          index: null,
        };
        return new Group(model, [deployment], true, rule.base.timeouts.totalMs, deployment.labels);
      }
    }
    throw new GatewayError('model_not_found', `model "${truncate(model)}" is not configured`);
  }

  /** Fallback groups that can serve (a group with no credentialed deployment is left out). */
  #known(names: readonly string[]): Group[] {
    const out: Group[] = [];
    for (const name of names) {
      const group = this.#groups.get(name);
      if (group) out.push(group);
    }
    return out;
  }
}

/** `*` matches any run of characters, `?` one; everything else is literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}

function truncate(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 100 ? `${printable.slice(0, 100)}…` : printable;
}
