/**
 * Model name → upstream. An alias of `model_list` wins; otherwise a
 * provider-qualified name (`openai/gpt-4.1`) is routed by the first
 * `route_rules` entry of that provider whose glob matches the upstream id.
 * The caller's model name only ever becomes the `model` field of the
 * forwarded body: the host is always the configured `api_base`, so a name
 * like `openai/../../evil` or `openai/http://x` cannot steer a request.
 */
import type { AliasRoute, RoutingConfig, Upstream } from '../protocol/config.js';
import type { RouteLabels } from '../protocol/frames.js';
import { GatewayError } from '../protocol/errors.js';

export interface RouteTarget {
  readonly upstream: Upstream;
  readonly labels: RouteLabels;
}

interface CompiledRule {
  readonly provider: string;
  readonly patterns: readonly RegExp[];
  readonly base: Omit<Upstream, 'upstreamModel'>;
}

export class Router {
  readonly #aliases = new Map<string, { routes: AliasRoute[]; next: number }>();
  readonly #rules: CompiledRule[];
  readonly maxResponseBytes: number;

  constructor(routing: RoutingConfig) {
    this.maxResponseBytes = routing.maxResponseBodyBytes;
    for (const route of routing.aliases) {
      const entry = this.#aliases.get(route.alias) ?? { routes: [], next: 0 };
      entry.routes.push(route);
      this.#aliases.set(route.alias, entry);
    }
    this.#rules = routing.rules.map(({ patterns, ...base }) => ({ provider: base.provider, patterns: patterns.map(globToRegExp), base }));
  }

  /** Throws `model_not_found` when neither an alias nor a rule routes the name. */
  resolve(model: string): RouteTarget {
    const alias = this.#aliases.get(model);
    if (alias) {
      // Several deployments under one alias share its traffic in turn, as in LiteLLM.
      const route = alias.routes[alias.next++ % alias.routes.length] as AliasRoute;
      return { upstream: route, labels: { model: route.alias, provider: route.provider } };
    }
    const slash = model.indexOf('/');
    if (slash > 0) {
      const provider = model.slice(0, slash);
      const id = model.slice(slash + 1);
      const rule = this.#rules.find((r) => r.provider === provider && r.patterns.some((p) => p.test(id)));
      if (rule && id.length > 0) return { upstream: { ...rule.base, upstreamModel: id }, labels: { model: `${provider}/*`, provider } };
    }
    throw new GatewayError('model_not_found', `model "${truncate(model)}" is not configured`);
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
