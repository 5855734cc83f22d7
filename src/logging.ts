/**
 * pino, configured once. Secrets are redacted by path wherever they could
 * appear; access lines carry no body and no header values but the request id.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'api_key',
  '*.api_key',
  'apiKey',
  '*.apiKey',
  'apiKeys',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'switchyard' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
