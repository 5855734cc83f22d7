/**
 * Where the fleet's shared state lives (CONTRACT.md, Shared state across
 * pods): `router_settings.redis_url`, or LiteLLM's `redis_host`,
 * `redis_port` and `redis_password`, resolved into one URL. Any of them may
 * be `os.environ/NAME`, as LiteLLM configs write a password. Read on the
 * front thread only: the URL (and its password) never goes to a worker.
 */

/** The resolved Redis connection, or none (each pod keeps its limits alone). */
export interface SharedStateConfig {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`. */
  readonly url: string;
  /** The URL with its password replaced by `***`, for logs and /status. */
  readonly shownUrl: string;
}

/** A shared-state key that cannot be used; `path` is the key, `problem` what is wrong with it. */
export class SharedStateSettingsError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

interface RedisKeys {
  readonly redis_url?: string | undefined;
  readonly redis_host?: string | undefined;
  readonly redis_port?: number | undefined;
  readonly redis_password?: string | undefined;
}

const ENV_REF = 'os.environ/';

export function resolveSharedState(keys: RedisKeys, env: Record<string, string | undefined>): SharedStateConfig | null {
  const read = (key: keyof RedisKeys): string | undefined => {
    const value = keys[key];
    if (value === undefined) return undefined;
    const text = String(value);
    if (!text.startsWith(ENV_REF)) return text;
    const variable = text.slice(ENV_REF.length);
    const found = env[variable];
    if (!found) throw new SharedStateSettingsError(`router_settings.${key}`, `names the variable ${variable}, which is not set`);
    return found;
  };
  const given = read('redis_url');
  if (given !== undefined) {
    if (keys.redis_host !== undefined) throw new SharedStateSettingsError('router_settings.redis_host', 'give redis_url or redis_host, not both');
    return fromUrl(given, 'router_settings.redis_url');
  }
  const host = read('redis_host');
  if (host === undefined) {
    if (keys.redis_port !== undefined || keys.redis_password !== undefined) throw new SharedStateSettingsError('router_settings.redis_host', 'is needed with redis_port or redis_password');
    return null;
  }
  const port = keys.redis_port ?? 6379;
  if (port < 1 || port > 65_535) throw new SharedStateSettingsError('router_settings.redis_port', 'must be a port number (1-65535)');
  const password = read('redis_password');
  const auth = password === undefined || password === '' ? '' : `:${encodeURIComponent(password)}@`;
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return fromUrl(`redis://${auth}${bracketed}:${port}`, 'router_settings.redis_host');
}

function fromUrl(text: string, path: string): SharedStateConfig {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SharedStateSettingsError(path, 'is not a URL (expected redis://host:port or rediss://host:port)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new SharedStateSettingsError(path, `must be a redis:// or rediss:// URL, not ${url.protocol}//`);
  if (url.hostname === '') throw new SharedStateSettingsError(path, 'has no host');
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d{1,2}$/.test(db)) throw new SharedStateSettingsError(path, `names database "${db}"; a database is a number, e.g. redis://host:6379/0`);
  const shown = new URL(url.href);
  if (shown.password !== '') shown.password = '***';
  return Object.freeze({ url: url.href, shownUrl: shown.href });
}
