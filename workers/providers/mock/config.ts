/** The `mock` provider's config (workers/providers/config.ts): no network, no key, knobs so that demos and load tests can model a real provider. */
import type { ProviderConfig } from '../config.js';

export interface MockSettings {
  readonly latencyMs: number;
  readonly streamChunks: number;
  readonly chunkIntervalMs: number;
  readonly embeddingDimensions: number;
  /** Fault injection (tests, demos): take the worker down mid-call, or fail the call as a broken adapter would. */
  readonly fault: 'none' | 'crash' | 'exit' | 'throw' | 'hang';
}

const DEFAULTS = { latencyMs: 0, streamChunks: 8, chunkIntervalMs: 0, embeddingDimensions: 16 } as const;

export const mockConfig: ProviderConfig<MockSettings> = {
  info: { apiBase: null, keyVariable: null, keylessAtOwnBase: false, responsesApi: false },
  params: (z) => ({
    mock_latency_ms: z.number().int().nonnegative().optional(),
    mock_stream_chunks: z.number().int().positive().max(100_000).optional(),
    mock_chunk_interval_ms: z.number().int().nonnegative().optional(),
    mock_embedding_dimensions: z.number().int().positive().max(65_536).optional(),
    /**
     * Fault injection for resilience tests and demos: `crash` throws asynchronously in the worker,
     * `exit` ends the worker thread, `throw` fails the call with an error no adapter should throw.
     */
    mock_fault: z.enum(['none', 'crash', 'exit', 'throw', 'hang']).optional(),
  }),
  settings: (p) => ({
    latencyMs: (p.mock_latency_ms as number | undefined) ?? DEFAULTS.latencyMs,
    streamChunks: (p.mock_stream_chunks as number | undefined) ?? DEFAULTS.streamChunks,
    chunkIntervalMs: (p.mock_chunk_interval_ms as number | undefined) ?? DEFAULTS.chunkIntervalMs,
    embeddingDimensions: (p.mock_embedding_dimensions as number | undefined) ?? DEFAULTS.embeddingDimensions,
    fault: (p.mock_fault as MockSettings['fault'] | undefined) ?? 'none',
  }),
};
