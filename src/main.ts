/**
 * Process entry: load and validate the config, start the gateway, wire
 * signals. Wiring only; everything it calls lives in its own module.
 */
import { ConfigError, loadConfig, type GatewayConfig } from './config/load.js';
import { workerModeReport } from './config/workers.js';
import { startGateway } from './gateway.js';
import { createLogger, flushLogs } from './logging.js';
import { UWS_NATIVE } from './front/server.js';
import { SERVER_HEADER } from '../protocol/version.js';

let config: GatewayConfig;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`switchyard: invalid configuration: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}

const log = createLogger(config.logLevel);
for (const warning of config.warnings) log.warn({ event: 'config_unsupported_key' }, warning);
if (!UWS_NATIVE) {
  log.error(
    { event: 'uws_fallback' },
    'uWebSockets.js native binary did NOT load: serving on the slow pure-JS fallback. Expect far lower throughput; check Node is v20 (ABI 115) on glibc >= 2.36.',
  );
}
if (config.apiKeyGenerated) {
  // CONTRACT.md: no key configured → a random one is made and logged once.
  log.warn({ event: 'api_key_generated' }, `no GATEWAY_API_KEY set; generated key for this run: ${config.apiKeys[0]}`);
}

// Start-up lines go out now, not with the next log batch (up to 200 ms later): a script that reads
// the generated key, or an operator watching for the uWS fallback, has them before /ready says 200.
void flushLogs(log);
const gateway = await startGateway(config, log);

// Graceful drain (docs/OPERATIONS.md): a second SIGTERM skips the waiting.
let signals = 0;
const stop = (signal: string) => {
  signals++;
  if (signals > 1) {
    log.warn({ event: 'drain_forced', signal }, `${signal} again: ending open requests now`);
    void gateway.drain({ now: true });
    return;
  }
  log.info({ event: 'drain_started', signal, drain_delay_ms: config.drainDelayMs, drain_timeout_ms: config.drainTimeoutMs }, `${signal}: draining (readiness now 503)`);
  gateway.drain().then(
    (report) => {
      log.info({ event: 'drain_done', ...report }, 'drained; exiting');
      return flushLogs(log).then(() => process.exit(0));
    },
    (err: unknown) => {
      log.error({ event: 'drain_failed', err }, 'drain failed');
      void flushLogs(log).then(() => process.exit(1));
    },
  );
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

// SIGHUP: re-read the config file; validated first, swapped whole, or the old one kept.
let configVersion = config.routing.version;
process.on('SIGHUP', () => {
  try {
    const next = loadConfig(process.env, configVersion + 1);
    gateway.reload(next);
    configVersion = next.routing.version;
    for (const warning of next.warnings) log.warn({ event: 'config_unsupported_key' }, warning);
    log.info({ event: 'config_reloaded', config: next.source, version: configVersion }, 'configuration reloaded');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.error({ event: 'config_reload_failed', error: message }, `configuration not reloaded, keeping the current one: ${message}`);
  }
});

// Announced only now that every signal has its handler: whoever acts on this line (a supervisor, a
// test) may signal at once, and a SIGHUP or SIGTERM before the handlers would kill the process.
const mode = workerModeReport(config.workerMode);
log.info(
  { event: 'listening', host: config.host, port: gateway.port, config: config.source, workers: mode.workers, worker_mode: mode, uws_native: UWS_NATIVE },
  `${SERVER_HEADER} listening on ${config.host}:${gateway.port} (${mode.description})`,
);
void flushLogs(log);
