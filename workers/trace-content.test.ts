import { describe, expect, it } from 'vitest';
import { inputContent, OutputContent } from './trace-content.js';

/** `[name, json, …]` as `{ name: parsed json }`. */
function parsed(list: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < list.length; i += 2) out[list[i] as string] = JSON.parse(list[i + 1] as string);
  return out;
}

describe('message content for spans (GenAI conventions message schema)', () => {
  it('a chat request: system and developer messages are the instructions; tool calls and tool results are parts', () => {
    const out = parsed(
      inputContent('chat', {
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'developer', content: [{ type: 'text', text: 'no emojis' }] },
          { role: 'user', content: [{ type: 'text', text: 'weather?' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'rainy' },
        ],
      }),
    );
    expect(out['gen_ai.system_instructions']).toEqual([
      { type: 'text', content: 'be brief' },
      { type: 'text', content: 'no emojis' },
    ]);
    expect(out['gen_ai.input.messages']).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'weather?' }, { type: 'image_url' }] },
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'weather', arguments: { city: 'Paris' } }] },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_1', response: 'rainy' }] },
    ]);
  });

  it('a Responses API request: instructions, a string or items (messages, function calls and their output)', () => {
    expect(parsed(inputContent('responses', { instructions: 'be brief', input: 'hi' }))).toEqual({
      'gen_ai.system_instructions': [{ type: 'text', content: 'be brief' }],
      'gen_ai.input.messages': [{ role: 'user', parts: [{ type: 'text', content: 'hi' }] }],
    });
    const items = parsed(
      inputContent('responses', {
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'weather?' }] },
          { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c1', output: 'rainy' },
        ],
      }),
    );
    expect(items['gen_ai.input.messages']).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'weather?' }] },
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'c1', name: 'weather', arguments: {} }] },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: 'rainy' }] },
    ]);
    expect(inputContent('embeddings', { input: 'secret text' })).toEqual([]);
  });

  it('a streamed answer is assembled per choice: text joined, tool call arguments joined from their fragments', () => {
    const out = new OutputContent();
    const event = (choices: unknown[]) => `data: ${JSON.stringify({ id: 'x', choices })}\n\n`;
    out.observe(event([{ index: 0, delta: { role: 'assistant', content: '' } }]) + event([{ index: 0, delta: { content: 'Let me ' } }]), true);
    out.observe(event([{ index: 0, delta: { content: 'check.' } }]), true);
    out.observe(event([{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"ci' } }] } }]), true);
    out.observe(event([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"Paris"}' } }] } }]) + event([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]) + 'data: [DONE]\n\n', true);
    expect(JSON.parse(out.messages() as string)).toEqual([
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: 'Let me check.' },
          { type: 'tool_call', id: 'call_1', name: 'weather', arguments: { city: 'Paris' } },
        ],
        finish_reason: 'tool_calls',
      },
    ]);
  });

  it('a whole reply: chat choices, or a Responses API response (also the one a stream\'s response.completed carries)', () => {
    const chat = new OutputContent();
    chat.observe(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }] }), false);
    expect(JSON.parse(chat.messages() as string)).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'hello' }], finish_reason: 'stop' }]);

    const response = { status: 'completed', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] }] };
    const streamed = new OutputContent();
    streamed.observe(`event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response })}\n\n`, true);
    expect(JSON.parse(streamed.messages() as string)).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'hello' }], finish_reason: 'completed' }]);

    const none = new OutputContent();
    none.observe('<html>bad gateway</html>', false);
    expect(none.messages()).toBeNull();
  });
});
