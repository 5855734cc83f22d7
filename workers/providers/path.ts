/**
 * A caller's model id inside an upstream URL (CONTRACT.md, Native
 * providers): always one encoded path segment, so it cannot add a segment,
 * a query or a fragment; `.` and `..`, which a server or proxy would
 * resolve against the configured api_base, are refused.
 */
import { GatewayError } from '../../protocol/errors.js';

export function pathSegment(id: string): string {
  if (id === '' || id === '.' || id === '..') {
    throw new GatewayError('invalid_request', `the model id "${id}" cannot be used in the provider's URL`);
  }
  // encodeURIComponent leaves `.` alone; every character that could end the segment (`/`, `?`, `#`, `%`, `\`) is escaped.
  return encodeURIComponent(id);
}
