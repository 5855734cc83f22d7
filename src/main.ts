/**
 * Process entry: load and validate the config, start the gateway, wire
 * signals. Wiring only; everything it calls lives in its own module.
 */
import { ConfigError, loadConfig, type GatewayConfig } from './config/load.js';
import { startGateway } from './gateway.js';
import { createLogger, flushLogs } from './logging.js';
import { UWS_NATIVE } from './front/server.js';
import { SERVER_HEADER } from './version.js';

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

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ event: 'shutdown', signal }, 'shutting down');
  gateway.close().then(
    () => flushLogs(log).then(() => process.exit(0)),
    (err: unknown) => {
      log.error({ event: 'shutdown_failed', err }, 'shutdown failed');
      void flushLogs(log).then(() => process.exit(1));
    },
  );
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
