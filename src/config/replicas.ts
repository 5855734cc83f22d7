/**
 * Replicas of a `model_list` entry (CONTRACT.md, Inference-aware routing,
 * Replicas): the `replicas`, `dns_refresh` and `dns_servers` params, their
 * checks, and the expansion of an entry into one deployment per replica,
 * with id `<entry id>/<host:port>`.
 *
 * A listed set is expanded once, at load. A `dns` set has its replicas
 * only once the front's resolver (src/supervisor/replica-dns.ts) has an
 * answer: the loaded config holds the set and no deployment of it, and
 * `withDnsReplicas` makes the routed config from the loaded one and the
 * current answers, each time an answer changes (as a reload does).
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import type { AliasRoute, ReplicaSet, RoutingConfig } from '../../protocol/config.js';

/** `dns_refresh` when not given, seconds. */
export const DEFAULT_DNS_REFRESH_S = 5;
const MIN_DNS_REFRESH_S = 0.05;

/** `1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:53`: what `dns.Resolver#setServers` takes (addresses only: a server named by a name would need a resolver itself). */
export function parseDnsServer(text: string): { host: string; port: number } | null {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text);
  const plain = /^([^:]+)(?::(\d{1,5}))?$/.exec(text);
  const [host, port] = bracketed ? [bracketed[1], bracketed[2]] : plain ? [plain[1], plain[2]] : isIP(text) === 6 ? [text, undefined] : [undefined, undefined];
  if (host === undefined || isIP(host) === 0) return null;
  if (bracketed && isIP(host) !== 6) return null;
  const n = port === undefined ? 53 : Number(port);
  return n >= 1 && n <= 65_535 ? { host, port: n } : null;
}

/** The params keys, spread into the params schema (src/config/schema.ts). */
export const replicaParamsShape = {
  /** `dns`: each address the api_base host resolves to is a replica; or a list of api_base URLs. Default: the one api_base. */
  replicas: z
    .union([z.literal('dns'), z.array(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. http://10.0.0.5:8000/v1' })).min(1, 'must list at least one api_base URL, or be "dns"')], {
      error: (issue) => (Array.isArray(issue.input) ? undefined : 'must be "dns" or a list of api_base URLs'),
    })
    .optional(),
  /** Seconds between two resolutions of a `dns` set; at least 0.05, so a typo cannot turn it into a flood of questions. */
  dns_refresh: z.number().min(MIN_DNS_REFRESH_S, `must be at least ${MIN_DNS_REFRESH_S} (seconds)`).finite().optional(),
  /** DNS servers to ask instead of the system resolver. */
  dns_servers: z
    .array(z.string().refine((text) => parseDnsServer(text) !== null, 'must be an IP address with an optional port, e.g. "10.0.0.10:53" or "[fd00::a]:53"'))
    .min(1, 'must list at least one server')
    .optional(),
};

type ReplicaParams = { [K in keyof typeof replicaParamsShape]?: z.infer<(typeof replicaParamsShape)[K]> };

/** How a `dns` set is resolved. */
export interface DnsSettings {
  /** The api_base host: a name (an IP address has nothing to resolve). */
  readonly host: string;
  /** The api_base port, explicit or the scheme's. */
  readonly port: number;
  readonly refreshMs: number;
  /** `host:port` of each server to ask, as `setServers` takes them; empty: the system resolver (`/etc/hosts` included). */
  readonly servers: readonly string[];
}

/** What an entry's params ask for. */
export type ReplicaSpec = { readonly kind: 'none' } | { readonly kind: 'list'; readonly bases: readonly string[] } | { readonly kind: 'dns'; readonly dns: DnsSettings };

/** A config mistake about replicas: `key` is the params key it is about, `message` what is wrong. */
export class ReplicaParamsError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The entry's replicas, checked against its resolved `apiBase` (null: a provider with no network,
 * such as mock). Throws ReplicaParamsError naming the key.
 */
export function replicaSpecOf(params: ReplicaParams, apiBase: string | null, provider: string): ReplicaSpec {
  const { replicas } = params;
  if (replicas !== 'dns') {
    if (params.dns_servers !== undefined) throw new ReplicaParamsError('dns_servers', 'only meaningful with replicas: dns');
    if (params.dns_refresh !== undefined) throw new ReplicaParamsError('dns_refresh', 'only meaningful with replicas: dns');
  }
  if (replicas === undefined) return NONE;
  if (apiBase === null) throw new ReplicaParamsError('replicas', `provider "${provider}" calls no server, so it has no replicas`);
  if (replicas !== 'dns') {
    const seen = new Map<string, number>();
    replicas.forEach((base, i) => {
      const address = addressOf(base);
      const clash = seen.get(address);
      if (clash !== undefined) throw new ReplicaParamsError(`replicas[${i}]`, `${address} is already replicas[${clash}]; each replica is one host:port (its deployment id is "<entry id>/${address}")`);
      seen.set(address, i);
    });
    return Object.freeze({ kind: 'list', bases: Object.freeze(replicas.map((base) => base.replace(/\/+$/, ''))) });
  }
  const url = new URL(apiBase);
  const host = url.hostname;
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) throw new ReplicaParamsError('replicas', `"dns" resolves the api_base host, and ${host} is an IP address: list the replicas instead`);
  const servers = (params.dns_servers ?? []).map((text) => {
    const { host: ip, port } = parseDnsServer(text) as { host: string; port: number };
    return isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`;
  });
  return Object.freeze({
    kind: 'dns',
    dns: Object.freeze({ host, port: portOf(url), refreshMs: Math.round((params.dns_refresh ?? DEFAULT_DNS_REFRESH_S) * 1000), servers: Object.freeze(servers) }),
  });
}

const NONE: ReplicaSpec = Object.freeze({ kind: 'none' });

const portOf = (url: URL): number => (url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port));

/** `host:port` of a URL, the port explicit (`[v6]:port` for IPv6): a replica's part of its deployment id. */
export function addressOf(base: string): string {
  const url = new URL(base);
  return `${url.hostname}:${portOf(url)}`;
}

/** `host:port` of a resolved IP address. */
export function ipAddress(ip: string, port: number): string {
  return isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The deployment of one replica: the entry at this `apiBase` (listed), or at its own, connected to `connectTo` (DNS). */
export function replicaRoute(entry: AliasRoute, address: string, apiBase: string, connectTo: string | null): AliasRoute {
  return Object.freeze({ ...entry, id: `${entry.id}/${address}`, apiBase, connectTo, replica: Object.freeze({ entry: entry.id, address }) });
}

/** A `dns` set of the loaded config, and where its replicas go among the loaded deployments (config order). */
export interface DnsReplicaSet extends ReplicaSet {
  readonly source: 'dns';
  readonly dns: DnsSettings;
  /** The index in the loaded config's `aliases` before which its replicas are placed. */
  readonly at: number;
}

export const isDnsSet = (set: ReplicaSet): set is DnsReplicaSet => set.source === 'dns';

/**
 * The routed config: the loaded one with each `dns` set's replicas, from `answers` (entry id → IP
 * addresses; none for a set not answered yet). Addresses are sorted, so the same answer in
 * another order is the same config. `slots` are left to the front (DeploymentSlots.assign).
 */
export function withDnsReplicas(loaded: RoutingConfig, answers: ReadonlyMap<string, readonly string[]>): RoutingConfig {
  const sets = loaded.replicaSets.filter(isDnsSet);
  if (sets.length === 0) return loaded;
  const aliases: AliasRoute[] = [];
  const place = (at: number) => {
    for (const set of sets) {
      if (set.at !== at) continue;
      for (const ip of sortAddresses(answers.get(set.entry.id) ?? [])) aliases.push(replicaRoute(set.entry, ipAddress(ip, set.dns.port), set.entry.apiBase as string, ip));
    }
  };
  loaded.aliases.forEach((route, i) => {
    place(i);
    aliases.push(route);
  });
  place(loaded.aliases.length);
  return Object.freeze({ ...loaded, aliases: Object.freeze(aliases), slots: Object.freeze([]) });
}

/** IPv4 before IPv6, each in text order, no repeats. */
export function sortAddresses(ips: readonly string[]): string[] {
  return [...new Set(ips)].sort((a, b) => isIP(a) - isIP(b) || (a < b ? -1 : a > b ? 1 : 0));
}
