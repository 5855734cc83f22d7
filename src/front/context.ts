/** Everything a route handler reaches for, built once by src/gateway.ts. */
import type { Logger } from 'pino';
import type { AccessLog } from '../access-log.js';
import type { GatewayConfig } from '../config/load.js';
import type { Metrics } from '../metrics/registry.js';
import type { Counters } from '../supervisor/counters.js';
import type { HealthSupervisor } from '../supervisor/health-supervisor.js';
import type { WorkerPool } from '../supervisor/worker-pool.js';
import type { DeploymentSlots } from '../supervisor/deployment-slots.js';
import type { AwsChainStates } from '../supervisor/aws-chain.js';
import type { BearerAuth } from './auth.js';
import type { StreamKeepalive } from './keepalive.js';
import type { Lifecycle } from './lifecycle.js';
import type { Tracing } from '../tracing/tracing.js';
import type { ReplicaDns } from '../supervisor/replica-dns.js';
import type { SharedStateView } from '../shared-state/fleet.js';
import type { InferenceFleet } from '../inference/fleet.js';

export interface FrontContext {
  /** Swapped whole on reload; handlers read it per request. */
  config: GatewayConfig;
  /** Swapped with the config on reload (keys may rotate). */
  auth: BearerAuth;
  readonly pool: WorkerPool;
  /** The pod's shared deployment state and the slot of each deployment id (status and metrics read it). */
  readonly deployments: DeploymentSlots;
  /** Deployments with server_metrics: their scrapers and prefix indexes (status and metrics read their figures). */
  readonly inference: InferenceFleet;
  /** What the workers reported of the AWS credential chain (bedrock deployments without keys), per region. */
  readonly awsChain: AwsChainStates;
  readonly health: HealthSupervisor;
  readonly metrics: Metrics;
  readonly counters: Counters;
  readonly log: Logger;
  /** One line per provider request (src/access-log.ts). */
  readonly access: AccessLog;
  readonly keepalive: StreamKeepalive;
  readonly uwsNative: boolean;
  readonly lifecycle: Lifecycle;
  /** Null when tracing is off: the request path then checks this and nothing else. */
  readonly tracing: Tracing | null;
  /** The resolution of the `replicas: dns` entries (/status reads it). */
  readonly replicas: ReplicaDns;
  /** Limits and cooldowns shared through Redis (src/shared-state/); null without a redis_url: `shared_state: off`. */
  readonly sharedState: SharedStateView | null;
}
