import { describe, expect, it } from 'vitest';
import type { FrameHandler, FrameSender } from '../protocol/channel.js';
import type { FromWorker, ToWorker } from '../protocol/frames.js';
import { WorkerSession } from './session.js';
import { deploymentStateMemory } from '../protocol/deployment-state.js';
import { deploymentLimitsMemory } from '../protocol/deployment-limits.js';

describe('WorkerSession', () => {
  it('reads a call body before the frame handler returns: a lent body is reused by the sender from then on', async () => {
    let deliver: FrameHandler<ToWorker> | null = null;
    const answers: FromWorker[] = [];
    const port: FrameSender<FromWorker> = { send: (frame) => answers.push(frame), lend: (frame) => answers.push(frame), share: (frame) => answers.push(frame), close() {} };
    const router = { strategy: 'simple-shuffle', numRetries: 2, retryAfterMs: 0, allowedFails: 3, cooldownMs: 30_000, fallbacks: [], contextWindowFallbacks: [], streamCommitTimeoutMs: 10_000, maxRetryWaitMs: 10_000, timeoutMs: null, limitWindowMs: 60_000, inference: { metricsIntervalMs: 250, staleAfterMs: 2_000, weights: { prefix: 3, queue: 2, kvCache: 2 }, queueThreshold: 5, kvCacheThreshold: 0.8, prefixBlockChars: 64, prefixIndexBlocks: 65_536 } } as const;
    const routing = { version: 1, aliases: [], slots: [], replicaSets: [], rules: [], router, maxResponseBodyBytes: 1 << 20 };
    new WorkerSession((onFrame) => ((deliver = onFrame), port), routing, { memory: deploymentStateMemory(1, 1), limits: deploymentLimitsMemory(1), worker: 0, indexes: {} });

    const lent = Buffer.from(JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }));
    (deliver as unknown as FrameHandler<ToWorker>)({ t: 'call', id: 7, op: 'chat', requestId: 'req-1' }, lent);
    // What a shared ring does once the handler has returned: the next payload overwrites these bytes.
    lent.fill(0x7b);
    await new Promise((resolve) => setImmediate(resolve));

    // Read after the overwrite, the body would be "{{{…": invalid_json. Read in time, it names a model no route has.
    expect(answers).toEqual([expect.objectContaining({ t: 'fail', id: 7, code: 'model_not_found' })]);
  });
});
