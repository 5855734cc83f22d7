/**
 * The groups of a routing config: every `model_list` alias with its
 * deployments, state slots and fallbacks. One reading of the config for
 * both threads: workers route by it, the front reports it (/status) and
 * keeps the state of lone deployments clear.
 */
import type { AliasRoute, FallbackList, RoutingConfig } from './config.js';

export interface GroupSpec {
  readonly name: string;
  /** In config order. */
  readonly deployments: readonly AliasRoute[];
  /** The state slot of each deployment, same order; empty before the front assigned them. */
  readonly slots: readonly number[];
  /** Groups tried in order when this one cannot serve. */
  readonly fallbacks: readonly string[];
  /** Groups tried, in order, only when a provider says the prompt is too long. */
  readonly contextWindowFallbacks: readonly string[];
  /** One deployment and no fallbacks: never cooled (CONTRACT.md), each call reaches it. */
  readonly lone: boolean;
  /** The whole request's bound when this group is asked for: `router_settings.timeout`, else its deployments' largest total timeout. */
  readonly timeoutMs: number;
}

export function groupsOf(routing: RoutingConfig): Map<string, GroupSpec> {
  const members = new Map<string, { deployments: AliasRoute[]; slots: number[] }>();
  routing.aliases.forEach((route, i) => {
    let group = members.get(route.alias);
    if (!group) members.set(route.alias, (group = { deployments: [], slots: [] }));
    group.deployments.push(route);
    const slot = routing.slots[i];
    if (slot !== undefined) group.slots.push(slot);
  });
  const { router } = routing;
  const groups = new Map<string, GroupSpec>();
  for (const [name, { deployments, slots }] of members) {
    const fallbacks = listFor(router.fallbacks, name);
    groups.set(name, {
      name,
      deployments,
      slots,
      fallbacks,
      contextWindowFallbacks: listFor(router.contextWindowFallbacks, name),
      lone: deployments.length === 1 && fallbacks.length === 0,
      timeoutMs: router.timeoutMs ?? Math.max(...deployments.map((d) => d.timeouts.totalMs)),
    });
  }
  return groups;
}

/** Every list given for `group`, joined in config order, each group once. */
function listFor(lists: readonly FallbackList[], group: string): readonly string[] {
  const out: string[] = [];
  for (const list of lists) if (list.group === group) for (const to of list.to) if (!out.includes(to)) out.push(to);
  return out;
}
