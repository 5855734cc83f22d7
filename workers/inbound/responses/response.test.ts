import { describe, expect, it } from 'vitest';
import { countingIds, goldenFiles } from './golden.js';
import { echoOf, toResponse, type Json } from './response.js';

/** The key order of a live answer (openai-python tests/lib/responses/test_responses.py, recorded from the API). */
const LIVE_KEY_ORDER = [
  'id', 'object', 'created_at', 'status', 'background', 'error', 'incomplete_details', 'instructions', 'max_output_tokens', 'max_tool_calls', 'model', 'output',
  'parallel_tool_calls', 'previous_response_id', 'prompt_cache_key', 'reasoning', 'safety_identifier', 'service_tier', 'store', 'temperature', 'text',
  'tool_choice', 'tools', 'top_logprobs', 'top_p', 'truncation', 'usage', 'user', 'metadata',
];

describe('chat completion → response object (golden files)', () => {
  for (const [name, golden] of goldenFiles<{ about: string; request: Json; chat: Json; response: Json }>('response-')) {
    it(`${name}: ${golden.about}`, () => {
      const response = JSON.parse(toResponse(golden.chat, echoOf(golden.request), countingIds())) as Json;
      expect(response).toEqual(golden.response);
      expect(Object.keys(response)).toEqual(LIVE_KEY_ORDER);
    });
  }

  it('a body without a choice is not the compatible format', () => {
    expect(() => toResponse({ choices: [] }, echoOf({}), countingIds())).toThrow(expect.objectContaining({ code: 'upstream_invalid_response' }));
  });
});
