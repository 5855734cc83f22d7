/**
 * The front's keeper of the shared deployment state (protocol/deployment-state.ts):
 * it makes the memory once, at start, and gives every deployment id a slot
 * in it. A reload keeps the slot of every id that survives, so its state
 * (cooldown, failures, latency, calls in flight) carries over and the calls
 * still running on the old config give their places back to the same
 * counters; a new id gets a fresh slot. A slot whose id left the config is
 * handed to a new id only once nothing is in flight on it.
 */
import type { RoutingConfig } from '../../protocol/config.js';
import { DeploymentStates, deploymentStateMemory, type DeploymentStateMemory } from '../../protocol/deployment-state.js';
import { groupsOf } from '../../protocol/routing-groups.js';
import { DeploymentLimits, deploymentLimitsMemory, type DeploymentLimitsMemory } from '../../protocol/deployment-limits.js';

/** Slots made at start: room for reloads that add deployments, at 64 bytes (plus 4 a worker) each. */
const MIN_CAPACITY = 1024;

export class DeploymentSlots {
  readonly memory: DeploymentStateMemory;
  /** The front's view: it only reads, clears and takes back, never reserves. */
  readonly states: DeploymentStates;
  /** rpm and tpm, by the same slots (protocol/deployment-limits.ts); the front reads them and, with Redis, credits them. */
  readonly limitsMemory: DeploymentLimitsMemory;
  readonly limits: DeploymentLimits;
  readonly #byId = new Map<string, number>();
  /** Slots of ids no longer configured, free once nothing is in flight on them. */
  #retired: number[] = [];
  #fresh = 0;

  constructor(deployments: number, workers: number) {
    this.memory = deploymentStateMemory(Math.max(MIN_CAPACITY, 2 * deployments), workers);
    this.states = new DeploymentStates(this.memory, 0);
    this.limitsMemory = deploymentLimitsMemory(this.memory.capacity);
    this.limits = new DeploymentLimits(this.limitsMemory);
  }

  /** The config with a slot for each deployment; throws when a reload brings more new ids than there is room for. */
  assign(routing: RoutingConfig): RoutingConfig {
    const ids = new Set(routing.aliases.map((route) => route.id));
    // Checked before anything changes: a refused reload leaves the slots of the running config as they are.
    const missing = routing.aliases.filter((route) => !this.#byId.has(route.id)).length;
    const leaving = [...this.#byId].filter(([id]) => !ids.has(id)).map(([, slot]) => slot);
    const reusable = [...this.#retired, ...leaving].filter((slot) => this.states.inFlight(slot) === 0).length;
    if (missing > this.memory.capacity - this.#fresh + reusable) {
      throw new Error(`the config has more new deployments than the ${this.memory.capacity} state slots made at start hold; restart to make room`);
    }
    for (const [id, slot] of this.#byId) {
      if (ids.has(id)) continue;
      this.#byId.delete(id);
      this.#retired.push(slot);
    }
    const slots = routing.aliases.map((route) => {
      let slot = this.#byId.get(route.id);
      if (slot === undefined) {
        slot = this.#allocate();
        this.#byId.set(route.id, slot);
      }
      return slot;
    });
    const assigned: RoutingConfig = Object.freeze({ ...routing, slots: Object.freeze(slots) });
    for (const group of groupsOf(assigned).values()) if (group.lone) this.states.forgive(group.slots[0] as number);
    return assigned;
  }

  /** The slot of a configured deployment id; undefined once it left the config (its slot is then retired). */
  slotOf(id: string): number | undefined {
    return this.#byId.get(id);
  }

  #allocate(): number {
    if (this.#fresh < this.memory.capacity) return this.#fresh++;
    // Found: `assign` counted the free ones first.
    const at = this.#retired.findIndex((slot) => this.states.inFlight(slot) === 0);
    const [slot] = this.#retired.splice(at, 1) as [number];
    this.states.clear(slot);
    this.limits.clear(slot);
    return slot;
  }
}
