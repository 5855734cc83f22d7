/**
 * The groups of a routing config: every `model_list` alias with its
 * deployments, state slots and fallbacks. One reading of the config for
 * both threads: workers route by it, the front reports it (/status) and
 * keeps the state of lone deployments clear.
 */
import type { AliasRoute, FallbackList, ReplicaSet, RoutingConfig } from './config.js';

export interface GroupSpec {
  readonly name: string;
  /** In config order. */
  readonly deployments: readonly AliasRoute[];
  /** The state slot of each deployment, same order; empty before the front assigned them. */
  readonly slots: readonly number[];
  /** Its entries with `replicas` (their replicas are among `deployments`, possibly none yet). */
  readonly replicaSets: readonly ReplicaSet[];
  /** Groups tried in order when this one cannot serve. */
  readonly fallbacks: readonly string[];
  /** Groups tried, in order, only when a provider says the prompt is too long. */
  readonly contextWindowFallbacks: readonly string[];
  /**
   * One deployment and no fallbacks: never cooled (CONTRACT.md), each call reaches it. A group
   * with an entry with `replicas` never is, even with one replica: its replicas cool one by one.
   */
  readonly lone: boolean;
  /** The whole request's bound when this group is asked for: `router_settings.timeout`, else its deployments' largest total timeout. */
  readonly timeoutMs: number;
}

export function groupsOf(routing: RoutingConfig): Map<string, GroupSpec> {
  const members = new Map<string, { deployments: AliasRoute[]; slots: number[]; replicaSets: ReplicaSet[] }>();
  const memberOf = (alias: string) => {
    let group = members.get(alias);
    if (!group) members.set(alias, (group = { deployments: [], slots: [], replicaSets: [] }));
    return group;
  };
  routing.aliases.forEach((route, i) => {
    const group = memberOf(route.alias);
    group.deployments.push(route);
    const slot = routing.slots[i];
    if (slot !== undefined) group.slots.push(slot);
  });
  for (const set of routing.replicaSets) memberOf(set.entry.alias).replicaSets.push(set);
  const { router } = routing;
  const groups = new Map<string, GroupSpec>();
  for (const [name, { deployments, slots, replicaSets }] of members) {
    const fallbacks = listFor(router.fallbacks, name);
    groups.set(name, {
      name,
      deployments,
      slots,
      replicaSets,
      fallbacks,
      contextWindowFallbacks: listFor(router.contextWindowFallbacks, name),
      lone: deployments.length === 1 && fallbacks.length === 0 && replicaSets.length === 0,
      timeoutMs: router.timeoutMs ?? Math.max(...deployments.map((d) => d.timeouts.totalMs), ...replicaSets.map((set) => set.entry.timeouts.totalMs)),
    });
  }
  return groups;
}

/** The route that speaks for a group (its provider, model and api_base in /status and /v1/models): its first deployment, else its first entry with replicas. */
export function leadRoute(group: GroupSpec): AliasRoute {
  return group.deployments[0] ?? (group.replicaSets[0] as ReplicaSet).entry;
}

/** Every list given for `group`, joined in config order, each group once. */
function listFor(lists: readonly FallbackList[], group: string): readonly string[] {
  const out: string[] = [];
  for (const list of lists) if (list.group === group) for (const to of list.to) if (!out.includes(to)) out.push(to);
  return out;
}
