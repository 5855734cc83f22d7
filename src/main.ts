/**
 * Process entry: load and validate the config, start the gateway, wire
 * signals. Wiring only; everything it calls lives in its own module.
 */
import { setFlagsFromString } from 'node:v8';
import { ConfigError, loadConfig, type GatewayConfig } from './config/load.js';
import { startGateway } from './gateway.js';
import { createLogger, flushLogs } from './logging.js';
import { UWS_NATIVE } from './front/server.js';
import { SERVER_HEADER } from './version.js';

// V8 starts a full GC once the old generation plus the external memory allocated since the
// last one passes a limit that, for a live heap as small as a worker's (~10 MB), is only ~12 MB
// above it. Node's per-read socket buffers are external memory: under embeddings load a worker
// passed that limit every ~100 ms and spent a fifth of its CPU marking. An initial old space of
// 64 MB is also a floor under that limit, so a worker's full GCs become rare (0 in 8.5 s of
// embeddings against 60): +35 % embeddings with one worker, as much as a growing factor of 4
// on every isolate gave, without letting the front's heap grow too (docs/OPERATIONS.md,
// Sizing). Flags are read when an isolate is made, so set here it reaches the worker threads
// only, made after this; the front thread's heap already exists, and needs no room since
// answers reach it through the byte ring, not as buffers of its own. One given on the
// command line wins.
if (!process.execArgv.some((arg) => /^--initial[-_]old[-_]space[-_]size\b/.test(arg))) {
  setFlagsFromString('--initial-old-space-size=64');
}

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

const gateway = await startGateway(config, log);
log.info({ event: 'listening', host: config.host, port: gateway.port, config: config.source, workers: config.workers, uws_native: UWS_NATIVE }, `${SERVER_HEADER} listening on ${config.host}:${gateway.port}`);

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
