/** Slots per deployment id across reloads (src/supervisor/deployment-slots.ts). */
import { describe, expect, it } from 'vitest';
import { RESERVED, DeploymentStates } from '../../protocol/deployment-state.js';
import { parseConfig } from '../config/load.js';
import { DeploymentSlots } from './deployment-slots.js';

const routing = (ids: string[], extra = '') =>
  parseConfig(`model_list:\n${ids.map((id) => `  - model_name: chat\n    params: { model: mock/m }\n    model_info: { id: ${id} }\n`).join('')}${extra}`, 'slots.yaml', {}).routing;

describe('DeploymentSlots', () => {
  it('a surviving id keeps its slot; a new one gets a fresh slot; a slot left behind is reused only once nothing is in flight on it', () => {
    const slots = new DeploymentSlots(2, 1);
    const first = slots.assign(routing(['a', 'b']));
    expect(first.slots).toEqual([0, 1]);
    const worker = new DeploymentStates(slots.memory, 0);
    worker.reserve(1, Date.now(), 0);
    const second = slots.assign(routing(['c', 'a']));
    expect(second.slots).toEqual([2, 0]);
    // Fill the fresh slots: from then on only retired ones are left, and b's (slot 1) has a call in flight.
    const many = Array.from({ length: slots.memory.capacity - 2 }, (_, i) => `n${i}`);
    slots.assign(routing(['a', 'c', ...many.slice(1)]));
    expect(() => slots.assign(routing(['a', 'c', ...many.slice(1), 'x', 'y']))).toThrow(/state slots/);
    worker.release(1, RESERVED);
    const third = slots.assign(routing(['a', 'c', ...many.slice(1), 'x']));
    expect(third.slots.at(-1)).toBe(1);
  });

  it('a deployment that becomes the lone member of its group has its cooldown ended', () => {
    const slots = new DeploymentSlots(2, 1);
    const before = slots.assign(routing(['a', 'b']));
    const worker = new DeploymentStates(slots.memory, 0);
    const now = Date.now();
    worker.fail(before.slots[0] as number, RESERVED, { code: 'rate_limited', status: 429, coolNow: true, cooldownMs: 60_000, allowedFails: 3, lone: false }, now);
    expect(worker.stateAt(0, now)).toBe(2);
    slots.assign(routing(['a']));
    expect(worker.stateAt(0, now)).toBe(0);
  });
});
