/**
 * Modules (spec 001): a module registers its checks through a registration
 * context, and registering several modules together also registers each
 * module's own health result as a check named after the module.
 */
import type { HealthRegistry } from './registry.js';
import type { HealthCheck, ModuleHealth } from './types.js';

export interface RegistrationContext {
  /** Registers one of the module's checks. */
  registerCheck(check: HealthCheck): void;
}

export interface HealthModule {
  readonly name: string;
  /** Registers the module's own checks, if any. */
  register?(context: RegistrationContext): void;
  /** The module's own health; registered automatically by `registerModules`. */
  health(signal: AbortSignal): Promise<ModuleHealth> | ModuleHealth;
  /** For the automatic module check; default true. */
  readonly requiredForReadiness?: boolean;
  readonly timeoutMs?: number;
}

export function registerModules(registry: HealthRegistry, modules: readonly HealthModule[]): void {
  const context: RegistrationContext = { registerCheck: (check) => registry.register(check) };
  for (const module of modules) {
    module.register?.(context);
    registry.register({
      name: module.name,
      check: (signal) => module.health(signal),
      ...(module.requiredForReadiness !== undefined && { requiredForReadiness: module.requiredForReadiness }),
      ...(module.timeoutMs !== undefined && { timeoutMs: module.timeoutMs }),
    });
  }
}
