/**
 * A replica found by `replicas: dns` is reached at its address while the request keeps the
 * configured host name (CONTRACT.md, Inference-aware routing, Replicas): the socket's lookup
 * answers that address, and the client still takes the Host header and the TLS server name from
 * the URL. The worker's undici pools (workers/upstream-http.ts) and the front's scraper of the
 * replica's /metrics (src/inference/scraper.ts) connect through it alike.
 */
import { isIPv6 } from 'node:net';

export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | Array<{ address: string; family: number }>, family?: number) => void;

/** A `net.connect` lookup that answers `address` whatever the name; `all` is what Node asks for when it races address families. */
export function pinnedLookup(address: string): (hostname: string, options: { all?: boolean }, callback: LookupCallback) => void {
  const family = isIPv6(address) ? 6 : 4;
  return (_hostname, options, callback) => {
    if (options.all === true) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}
