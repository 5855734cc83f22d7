import { describe, expect, it } from 'vitest';
import { countingIds, goldenFiles, sdkAnswering } from './golden.js';
import { toMessage, type AnthropicMessage } from './reply.js';

type Json = Record<string, unknown>;

/** The live API's key order (anthropic-sdk-typescript tests/lib/fixtures/*.txt, message_start's message). */
const LIVE_KEY_ORDER = ['id', 'type', 'role', 'model', 'content', 'stop_reason', 'stop_sequence', 'usage'];
const USAGE_KEY_ORDER = ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'output_tokens'];

describe('chat completion → Anthropic Message (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; options: { thinking: boolean; model: string }; chat: Json; message: AnthropicMessage }>('reply-')) {
    it(`${golden.name}: ${golden.case.about}`, async () => {
      const message = toMessage(golden.case.chat, { ...golden.case.options, ids: countingIds() });
      golden.expectAt('message', message);
      expect(Object.keys(message)).toEqual(LIVE_KEY_ORDER);
      expect(Object.keys(message.usage)).toEqual(USAGE_KEY_ORDER);
      for (const block of message.content) if (block.type === 'tool_use') expect(block.id).toMatch(/^[a-zA-Z0-9_-]+$/);
      // The official SDK reads it as it reads Anthropic's own answer.
      const client = sdkAnswering(() => new Response(JSON.stringify(message), { headers: { 'content-type': 'application/json' } }));
      const read = await client.messages.create({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
      expect(read).toEqual(message);
    });
  }

  it('a body without a choice is not the compatible format', () => {
    expect(() => toMessage({ choices: [] }, { thinking: false, model: 'm', ids: countingIds() })).toThrow(expect.objectContaining({ code: 'upstream_invalid_response' }));
  });
});
