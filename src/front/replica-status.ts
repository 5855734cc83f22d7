/**
 * The `replica_sets` of `/status/models/{alias}` (CONTRACT.md, Inference-aware
 * routing, Visible): per `model_list` entry with `replicas`, each replica's
 * address and state, with the load figures of the pod's scraper where it
 * has them. Each replica is also one of the alias's `deployments`, with
 * its id `<entry id>/<host:port>` and its whole routing state.
 */
import type { ReplicaSet } from '../../protocol/config.js';
import type { GroupSpec } from '../../protocol/routing-groups.js';
import type { DeploymentStates } from '../../protocol/deployment-state.js';
import type { ReplicaDns } from '../supervisor/replica-dns.js';
import type { ReplicaSetStatus } from './status-schemas.js';

/** A replica's load as the scraper last read it (server_metrics); null fields for what it has not read. */
export interface InferenceFigures {
  readonly waiting: number | null;
  readonly running: number | null;
  readonly kv_cache: number | null;
  readonly metrics_age_ms: number | null;
  readonly prefix_index_entries: number | null;
}

/** The figures of a deployment (a replica's id), or null when nothing is scraped for it. */
export type InferenceFiguresOf = (deploymentId: string) => InferenceFigures | null;

/** The default: no scraper, so every figure is null. */
export const noInferenceFigures: InferenceFiguresOf = () => null;

const NO_FIGURES: InferenceFigures = { waiting: null, running: null, kv_cache: null, metrics_age_ms: null, prefix_index_entries: null };

/** What the status of a group's replica sets reads. */
export interface ReplicaStatusSources {
  readonly states: DeploymentStates;
  readonly replicas: ReplicaDns;
  readonly inferenceFigures: InferenceFiguresOf;
}

export function replicaSetsStatus(group: GroupSpec, sources: ReplicaStatusSources, now: number): ReplicaSetStatus[] {
  return group.replicaSets.map((set) => replicaSetStatus(set, group, sources, now));
}

function replicaSetStatus(set: ReplicaSet, group: GroupSpec, { states, replicas, inferenceFigures }: ReplicaStatusSources, now: number): ReplicaSetStatus {
  const members: ReplicaSetStatus['replicas'] = [];
  group.deployments.forEach((d, i) => {
    if (d.replica?.entry !== set.entry.id) return;
    const s = states.snapshot(group.slots[i] as number, now);
    members.push({
      address: d.replica.address,
      deployment: d.id,
      state: s.state,
      in_flight: s.inFlight,
      cooldown_remaining_ms: s.cooldownRemainingMs,
      ...(inferenceFigures(d.id) ?? NO_FIGURES),
    });
  });
  const resolution = set.source === 'dns' ? replicas.status(set.entry.id) : null;
  return {
    id: set.entry.id,
    source: set.source,
    dns:
      resolution === null
        ? null
        : {
            // The name only: the api_base's path can carry a tenant or a token.
            host: new URL(set.entry.apiBase as string).host,
            state: resolution.state,
            resolved_at: resolution.resolvedAt === null ? null : new Date(resolution.resolvedAt).toISOString(),
            error: resolution.error,
          },
    replicas: members,
  };
}
