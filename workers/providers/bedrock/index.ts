/**
 * `bedrock`: AWS Bedrock's runtime API (CONTRACT.md, Native providers):
 * Converse and ConverseStream for chat, InvokeModel for Titan and Cohere
 * embeddings, signed with SigV4 or sent with a Bedrock API key. Everything
 * is in adapter.ts, loaded with its AWS packages on a bedrock deployment's
 * first call or probe: a worker that serves no bedrock deployment never
 * loads them (test/module-graph.test.ts).
 */
import type { Provider } from '../adapter.js';

let loaded: Promise<typeof import('./adapter.js')> | null = null;
const adapter = () => (loaded ??= import('./adapter.js'));

export const bedrockProvider: Provider = {
  call: async (call, sink) => (await adapter()).call(call, sink),
  probe: async (target) => (await adapter()).probe(target),
};
