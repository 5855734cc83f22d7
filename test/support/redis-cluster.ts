/**
 * A Redis Cluster of real redis-servers on free loopback ports, each master of an equal share of
 * the 16,384 slots and no replicas: what a fleet's `redis_url` may name (any one node). Built with
 * the cluster commands themselves (ADDSLOTSRANGE, MEET), as `redis-cli --cluster create` does.
 *
 * @example
 * const cluster = await startRedisCluster(3);
 * // router_settings: { redis_url: cluster.nodes[0].url }
 * await cluster.stop();
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis, type RedisServer } from './redis-server.js';
import { until } from './waits.js';

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** The node that serves `key`'s slot (CLUSTER KEYSLOT, against each node's range). */
  nodeFor(key: string): Promise<RedisServer>;
  stop(): Promise<void>;
}

const SLOTS = 16_384;

/** `args`: more configuration for every node (`['--cluster-require-full-coverage', 'no']`). */
export async function startRedisCluster(count = 3, args: readonly string[] = []): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const nodes = await Promise.all(
    Array.from({ length: count }, (_, i) => startRedis({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${i}.conf`), '--cluster-node-timeout', '2000', ...args] })),
  );
  const ranges = nodes.map((_, i) => [Math.floor((i * SLOTS) / count), Math.floor(((i + 1) * SLOTS) / count) - 1] as const);
  try {
    await Promise.all(nodes.map((node, i) => node.command('CLUSTER', 'ADDSLOTSRANGE', (ranges[i] as readonly [number, number])[0], (ranges[i] as readonly [number, number])[1])));
    for (const node of nodes.slice(1)) await (nodes[0] as RedisServer).command('CLUSTER', 'MEET', '127.0.0.1', node.port);
    // Every node knows every slot's owner once the gossip settles.
    await until(async () => (await Promise.all(nodes.map((n) => n.command('CLUSTER', 'INFO')))).every((info) => /cluster_state:ok/.test(String(info))), 'the cluster in state ok', 15_000, 50);
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
  return {
    nodes,
    async nodeFor(key) {
      const slot = Number(await (nodes[0] as RedisServer).command('CLUSTER', 'KEYSLOT', key));
      return nodes[ranges.findIndex(([from, to]) => slot >= from && slot <= to)] as RedisServer;
    },
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
