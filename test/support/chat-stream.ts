/** What the provider tests share on the client side: a function tool, and a stream's chunks collected (raw events: sse.ts). */
import type OpenAI from 'openai';

export type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;

export const WEATHER: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

/** Every chunk of an SDK stream, in order. */
export async function collect(stream: AsyncIterable<Chunk>): Promise<Chunk[]> {
  const chunks: Chunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** Streams `model`'s answer to a long question and leaves (aborts) at the `after`-th chunk; the chunks seen. */
export async function leaveMidStream(client: OpenAI, model: string, after: number): Promise<number> {
  const controller = new AbortController();
  const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'long' }] }, { signal: controller.signal });
  let seen = 0;
  try {
    for await (const _ of stream) if (++seen === after) controller.abort();
  } catch {
    // The SDK may end the loop quietly or throw its abort error: either way the client left.
  }
  return seen;
}
