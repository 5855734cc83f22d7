/**
 * TOOLKIT_HEALTH_CHECK_TIMEOUT and TOOLKIT_HEALTH_STARTUP_DELAY (spec 001,
 * Limits; CONTRACT.md): `5`, `5s`, `500ms`, `2m`. A bad value stops the
 * start with a message naming the variable.
 */

export interface HealthSettings {
  readonly defaultTimeoutMs: number;
  /** 0: no warm-up window. */
  readonly startupDelayMs: number;
}

export const HEALTH_DEFAULTS: HealthSettings = { defaultTimeoutMs: 5_000, startupDelayMs: 0 };

export class HealthSettingsError extends Error {
  override name = 'HealthSettingsError';
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000 };

/** `5` (seconds), `5s`, `500ms`, `1.5s`, `2m` → milliseconds; null when not a duration. */
export function parseDuration(text: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(text);
  if (!match) return null;
  const ms = Number(match[1]) * (UNITS[match[2] ?? 's'] as number);
  return Number.isFinite(ms) ? Math.round(ms) : null;
}

export function healthSettingsFromEnv(env: Record<string, string | undefined>): HealthSettings {
  const read = (name: string, fallback: number, allowZero: boolean): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const ms = parseDuration(raw);
    if (ms === null || ms < 0 || (!allowZero && ms === 0)) {
      throw new HealthSettingsError(`${name}="${raw}" is not a valid duration (use e.g. 5, 5s or 500ms${allowZero ? '' : ', greater than zero'})`);
    }
    return ms;
  };
  return {
    defaultTimeoutMs: read('TOOLKIT_HEALTH_CHECK_TIMEOUT', HEALTH_DEFAULTS.defaultTimeoutMs, false),
    startupDelayMs: read('TOOLKIT_HEALTH_STARTUP_DELAY', HEALTH_DEFAULTS.startupDelayMs, true),
  };
}
