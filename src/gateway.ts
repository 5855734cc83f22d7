/**
 * Assembles a running gateway from a validated config: worker pool,
 * metrics, counters and the uWS front, listening on the configured address.
 * Used by main.ts and by the integration tests (port 0).
 */
import uws from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config/load.js';
import { BearerAuth } from './front/auth.js';
import type { FrontContext } from './front/context.js';
import { StreamKeepalive } from './front/keepalive.js';
import { UWS_NATIVE, buildApp } from './front/server.js';
import { createMetrics } from './metrics/registry.js';
import { Counters } from './supervisor/counters.js';
import { HealthSupervisor } from './supervisor/health-supervisor.js';
import { WorkerPool } from './supervisor/worker-pool.js';

export interface Gateway {
  readonly port: number;
  /** `http://<host>:<port>` (127.0.0.1 when listening on all interfaces). */
  readonly url: string;
  readonly context: FrontContext;
  /** Swaps the config whole, in the front and in every worker; calls in flight finish on theirs. */
  reload(next: GatewayConfig): void;
  /** Stops listening, closes open connections and the worker pool. */
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, log: Logger): Promise<Gateway> {
  const pool = new WorkerPool(config.workers, config.routing, log);
  const ctx: FrontContext = {
    config,
    auth: new BearerAuth(config.apiKeys),
    pool,
    health: new HealthSupervisor(config, pool, log),
    metrics: createMetrics(),
    counters: new Counters(),
    log,
    keepalive: new StreamKeepalive(config.streamKeepaliveMs),
    uwsNative: UWS_NATIVE,
  };
  const app = buildApp(ctx);
  const socket = await new Promise<uws.us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (token) => (token ? resolve(token) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  const port = uws.us_socket_local_port(socket);
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  let closed = false;
  return {
    port,
    url: `http://${host}:${port}`,
    context: ctx,
    reload(next) {
      ctx.config = next;
      pool.setRouting(next.routing);
      ctx.health.reload(next);
    },
    async close() {
      if (closed) return;
      closed = true;
      uws.us_listen_socket_close(socket);
      (app as unknown as { close?: () => void }).close?.();
      ctx.health.stop();
      await pool.close();
    },
  };
}
