/**
 * Token counts of large replies (issue 21, point 8): a non-streamed reply
 * over 64 KiB, checked by structure rather than parsed whole
 * (workers/response-body.ts), whose `usage` holds nested details objects as
 * OpenAI sends them, is counted in `switchyard_tokens_total`
 * (docs/METRICS.md), as the same reply under 64 KiB is.
 */
import { describe, expect, it } from 'vitest';
import { FULL_CHECK_BYTES } from '../workers/response-body.js';
import { useGatewayWithUpstream } from './support/gateway.js';

/** A chat completion as OpenAI sends one: usage after the choices, with its details objects, then more members. */
function completion(content: string, prompt: number, completionTokens: number): Record<string, unknown> {
  return {
    id: 'chatcmpl-large',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'fake-model',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completionTokens,
      total_tokens: prompt + completionTokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_large',
  };
}

describe('switchyard_tokens_total counts the usage of a reply over 64 KiB', () => {
  const { gw, upstream } = useGatewayWithUpstream(() => ({ workers: 1 }));

  /** The up-chat series of the token counter, by kind. */
  async function tokens(): Promise<{ prompt: number; completion: number }> {
    const text = await (await gw.fetch('/metrics', { auth: false })).text();
    const read = (kind: string) => {
      const line = text.split('\n').find((l) => l.startsWith('switchyard_tokens_total{') && l.includes('model="up-chat"') && l.includes(`kind="${kind}"`));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    return { prompt: read('prompt'), completion: read('completion') };
  }

  async function countOf(body: Record<string, unknown>): Promise<{ prompt: number; completion: number }> {
    const before = await tokens();
    upstream.behaveOnce({ kind: 'status', status: 200, body });
    const reply = await gw.client().chat.completions.create({ model: 'up-chat', messages: [{ role: 'user', content: 'write at length' }] });
    expect(reply.choices[0]?.message.content).toBe((body.choices as Array<{ message: { content: string } }>)[0]!.message.content);
    const after = await tokens();
    return { prompt: after.prompt - before.prompt, completion: after.completion - before.completion };
  }

  it('a 100 KiB reply with prompt_tokens_details and completion_tokens_details', async () => {
    // Braces and quotes in the text, as code in a reply has them.
    const large = completion('function f() { return "}"; }\n'.repeat(3600), 1234, 5678);
    expect(Buffer.byteLength(JSON.stringify(large))).toBeGreaterThan(FULL_CHECK_BYTES);
    expect(await countOf(large)).toEqual({ prompt: 1234, completion: 5678 });
  });

  it('the same reply under 64 KiB counts the same way', async () => {
    const small = completion('function f() { return "}"; }\n', 21, 34);
    expect(Buffer.byteLength(JSON.stringify(small))).toBeLessThan(FULL_CHECK_BYTES);
    expect(await countOf(small)).toEqual({ prompt: 21, completion: 34 });
  });
});
