import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toolCallId } from '../../providers/gemini/tool-call-id.js';
import { countingIds } from './golden.js';
import { ENCODED_TOOL_ID_PREFIX, messageIdOf, toAnthropicToolId, toProviderToolId, TOOL_ID_PATTERN, uniqueIds } from './ids.js';

/** Provider ids as they come: OpenAI's, Bedrock's, Anthropic's, Gemini's with a thought signature (standard base64), and any string. */
const providerId = fc.oneof(
  fc.stringMatching(/^call_[A-Za-z0-9]{24}$/),
  fc.stringMatching(/^tooluse_[A-Za-z0-9_-]{22}$/),
  fc.stringMatching(/^toolu_01[A-Za-z0-9]{22}$/),
  fc.tuple(fc.stringMatching(/^call_[0-9a-f]{8}_[0-9]$/), fc.base64String({ minLength: 4, maxLength: 400 })).map(([base, signature]) => toolCallId(base, signature)),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 20 }).map((rest) => `${ENCODED_TOOL_ID_PREFIX}${rest}`),
);

describe('tool ids: what the gateway emits matches Anthropic\'s pattern and maps back', () => {
  it('any provider id round-trips, and the emitted id matches ^[a-zA-Z0-9_-]+$', () => {
    fc.assert(
      fc.property(providerId, (id) => {
        const emitted = toAnthropicToolId(id);
        expect(emitted).toMatch(TOOL_ID_PATTERN);
        expect(toProviderToolId(emitted)).toBe(id);
      }),
      { numRuns: 3000 },
    );
  });

  it('an id that matches already passes unchanged both ways (OpenAI, Anthropic, Bedrock ids: nothing to decode)', () => {
    for (const id of ['call_Q7vTn2LmXc9Rk4Wb1Yp8Zs3H', 'toolu_01A09q90qw90lq917835lq9', 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', 'call_7f3a9c_1']) {
      expect(toAnthropicToolId(id)).toBe(id);
      expect(toProviderToolId(id)).toBe(id);
    }
  });

  it("Gemini's signed id is encoded, and decoded back whole (signature included)", () => {
    const gemini = toolCallId('call_7f3a9c_0', 'CiQBjz1rX8+2fQ/aWm9nZXJzLw==');
    const emitted = toAnthropicToolId(gemini);
    expect(emitted).toBe('toolu_sy_Y2FsbF83ZjNhOWNfMF9fdGhvdWdodF9fQ2lRQmp6MXJYOCsyZlEvYVdtOW5aWEp6THc9PQ');
    expect(toProviderToolId(emitted)).toBe(gemini);
  });

  it("a client's id that only looks like one of ours (not canonical base64url, not UTF-8) is the provider's as it is", () => {
    for (const id of ['toolu_sy_', 'toolu_sy_A', 'toolu_sy_YQ=', 'toolu_sy__w', 'toolu_sy_gA']) {
      if (toProviderToolId(id) !== id) expect(toAnthropicToolId(toProviderToolId(id))).toBe(id);
    }
    expect(toProviderToolId('toolu_sy_A')).toBe('toolu_sy_A');
    expect(toProviderToolId('toolu_sy_gA')).toBe('toolu_sy_gA'); // 0x80: not UTF-8
  });
});

describe('message ids', () => {
  it("msg_ + the chat id, characters outside the pattern as _, an id that is msg_… already kept; none: the id source's", () => {
    const ids = countingIds();
    expect(messageIdOf('chatcmpl-BZ5xN8sLc4Wq1Hv7Rb3Zm6KyTfPoD', ids)).toBe('msg_chatcmpl-BZ5xN8sLc4Wq1Hv7Rb3Zm6KyTfPoD');
    expect(messageIdOf('msg_01XFDUDYJgAACzvnptvVoYEL', ids)).toBe('msg_01XFDUDYJgAACzvnptvVoYEL');
    expect(messageIdOf('4d46c468-07c9.43d6/ec35', ids)).toBe('msg_4d46c468-07c9_43d6_ec35');
    expect(messageIdOf('', ids)).toBe('msg_1');
    expect(messageIdOf(undefined, ids)).toBe('msg_2');
  });

  it('unique ids match the pattern and differ', () => {
    const a = uniqueIds('toolu');
    const b = uniqueIds('toolu');
    expect(a).toMatch(/^toolu_[a-zA-Z0-9_-]+$/);
    expect(a).not.toBe(b);
  });
});
