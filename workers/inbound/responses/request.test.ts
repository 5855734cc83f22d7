import { describe, expect, it } from 'vitest';
import { goldenFiles } from './golden.js';
import { toChatRequest } from './request.js';
import type { Json } from './response.js';

describe('Responses request → chat request (golden files)', () => {
  for (const [name, golden] of goldenFiles<{ about: string; responses: Json; chat: Json }>('request-')) {
    it(`${name}: ${golden.about}`, () => {
      expect(toChatRequest(golden.responses)).toEqual(golden.chat);
    });
  }
});

describe('what the chat path cannot carry is a 400 naming the parameter', () => {
  const base = { model: 'm', input: 'hi' };
  const refused = (body: Json) => {
    try {
      toChatRequest(body);
    } catch (err) {
      return { code: (err as { code?: string }).code, message: (err as Error).message };
    }
    throw new Error('accepted');
  };

  it('a built-in tool names itself and the way to serve it', () => {
    expect(refused({ ...base, tools: [{ type: 'function', name: 'f' }, { type: 'web_search_preview' }] })).toEqual({
      code: 'unsupported_parameter',
      message: expect.stringMatching(/^Unsupported parameter: 'tools\[1\]\.type': the built-in tool "web_search_preview" needs a deployment that serves the Responses API itself \(params\.responses_api\)/),
    });
  });

  it('max_tool_calls and top_logprobs have no chat equivalent; their neutral values pass', () => {
    expect(refused({ ...base, max_tool_calls: 3 })).toMatchObject({ code: 'unsupported_parameter', message: expect.stringContaining("'max_tool_calls'") });
    expect(refused({ ...base, top_logprobs: 2 })).toMatchObject({ code: 'unsupported_parameter', message: expect.stringContaining("'top_logprobs'") });
    expect(toChatRequest({ ...base, max_tool_calls: null, top_logprobs: 0 })).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  });

  it('items and parts chat has no form for', () => {
    expect(refused({ ...base, input: [{ type: 'computer_call_output', call_id: 'c' }] })).toMatchObject({ message: expect.stringContaining("'input[0].type'") });
    expect(refused({ ...base, input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }] })).toMatchObject({ message: expect.stringContaining("'input[0].content[0].file_id'") });
    expect(refused({ ...base, input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] })).toMatchObject({ message: expect.stringContaining('a system message can carry text only') });
    expect(refused({ ...base, tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'file_search' } })).toMatchObject({ message: expect.stringContaining("'tool_choice'") });
  });

  it('a tool choice, or parallel_tool_calls, without tools is left out (chat refuses them alone)', () => {
    expect(toChatRequest({ ...base, tool_choice: 'none', parallel_tool_calls: true })).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  });
});
