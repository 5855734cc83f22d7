/**
 * The package entry, for embedding Switchyard or reusing its parts:
 * the gateway, its config loader and the error catalogue.
 */
export { startGateway, type Gateway } from './gateway.js';
export { loadConfig, parseConfig, ConfigError, DEFAULTS, type GatewayConfig } from './config/load.js';
export { createLogger } from './logging.js';
export { ERRORS, GatewayError, errorBody, type ErrorCode } from '../protocol/errors.js';
export { ROUTES, type RouteSpec } from './front/routes.js';
export { VERSION } from '../protocol/version.js';
export * from './health/index.js';
