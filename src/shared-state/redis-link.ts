/**
 * The fleet's line to Redis (node-redis): one server, or a Redis Cluster when the node at
 * redis_url says it is one (`INFO cluster`), so the same key names any node of a cluster and the
 * cluster client finds the rest. Every command names the key it is for: a cluster routes on it
 * (each of the fleet's scripts touches one key, and the keys carry hash tags; scripts.ts).
 *
 * Nothing here decides whether Redis is lost: the connection's errors and ends are reported to
 * the fleet, whose pings judge (fleet.ts).
 */
import type * as NodeRedis from '@redis/client';

export interface RedisLink {
  /** One command for `key`, failing after `timeout` ms (and at once while disconnected: no offline queue). */
  send<T>(key: string, args: readonly string[], timeout: number): Promise<T>;
  readonly isReady: boolean;
  /** After a first answer: asks the node whether it is in a cluster, and if so moves to the cluster client. Once. */
  settle(timeout: number): Promise<void>;
  /**
   * In a cluster, a PING to every master (none for one server, whose every command is the ping): a node that
   * does not answer fails it, so the fleet goes on alone before the calls whose keys live there run out of credit.
   */
  pingMasters(timeout: number): Promise<void>;
  destroy(): void;
}

export interface LinkOptions {
  readonly url: string;
  readonly connectTimeoutMs: number;
  /** A lost connection or one that failed: the fleet's to judge. */
  readonly onTrouble: (reason: string) => void;
}

/** The node-redis surface used here: sendCommand's two shapes (one server's; a cluster's, routed by key). */
interface ServerClient {
  connect(): Promise<unknown>;
  sendCommand<T>(args: readonly string[], options?: { timeout?: number }): Promise<T>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  destroy(): void;
  readonly isReady: boolean;
}
interface ClusterClient {
  connect(): Promise<unknown>;
  readonly masters: readonly unknown[];
  nodeClient(node: unknown): Promise<{ sendCommand<T>(args: readonly string[], options?: { timeout?: number }): Promise<T> }>;
  sendCommand<T>(firstKey: string, isReadonly: boolean, args: readonly string[], options?: { timeout?: number }): Promise<T>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  destroy(): void;
  readonly isReady: boolean;
}

/** Starts connecting (never waits: the pod serves on its own until Redis answers). */
export function openRedisLink(redis: typeof NodeRedis, options: LinkOptions): RedisLink {
  const { url, connectTimeoutMs, onTrouble } = options;
  let cluster: ClusterClient | null = null;
  /** Whether redis_url's node was asked if it is in a cluster (the cluster client is set when it is). */
  let settled = false;
  const socket = { connectTimeout: connectTimeoutMs, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000) };
  const server = redis.createClient({ url, disableOfflineQueue: true, socket }) as unknown as ServerClient;
  // Once the cluster client took over, the first connection's end is no news.
  server.on('error', (err) => cluster === null && onTrouble(`connection: ${(err as Error).message}`));
  server.on('end', () => cluster === null && onTrouble('connection closed'));
  server.connect().catch((err: unknown) => onTrouble(`connect: ${(err as Error).message}`));

  return {
    send: (key, args, timeout) => (cluster === null ? server.sendCommand(args, { timeout }) : cluster.sendCommand(key, false, args, { timeout })),
    get isReady() {
      return cluster === null ? server.isReady : cluster.isReady;
    },
    async settle(timeout) {
      if (settled) return;
      // A server that refuses INFO (an ACL without it, a managed Redis that renames it) answers the scripts all the same.
      const info = await server.sendCommand<string>(['INFO', 'cluster'], { timeout }).catch((err: unknown) => {
        if (err instanceof redis.ErrorReply) return '';
        throw err;
      });
      if (!/^cluster_enabled:1\b/m.test(String(info))) {
        settled = true;
        return;
      }
      // The nodes the cluster names are reached with redis_url's credentials and TLS (node-redis takes them from `defaults`).
      const parsed = new URL(url);
      const next = redis.createCluster({
        rootNodes: [{ url }],
        defaults: {
          ...(parsed.username === '' ? {} : { username: decodeURIComponent(parsed.username) }),
          ...(parsed.password === '' ? {} : { password: decodeURIComponent(parsed.password) }),
          disableOfflineQueue: true,
          socket: { ...socket, ...(parsed.protocol === 'rediss:' ? { tls: true as const } : {}) },
        },
      }) as unknown as ClusterClient;
      next.on('error', (err) => onTrouble(`cluster: ${(err as Error).message}`));
      try {
        await next.connect();
      } catch (err) {
        next.destroy();
        throw err;
      }
      cluster = next;
      settled = true;
      server.destroy();
    },
    async pingMasters(timeout) {
      const each = cluster;
      if (each === null) return;
      await Promise.all(
        each.masters.map(async (master) => {
          // A node being connected to answers only once connected: the wait is bounded too.
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`a cluster node did not answer in ${timeout} ms`)), timeout)));
          try {
            await Promise.race([each.nodeClient(master).then((client) => client.sendCommand(['PING'], { timeout })), late]);
          } finally {
            clearTimeout(timer);
          }
        }),
      );
    },
    destroy() {
      if (cluster !== null) cluster.destroy();
      else server.destroy();
    },
  };
}
