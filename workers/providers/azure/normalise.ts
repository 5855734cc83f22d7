/**
 * Azure OpenAI speaks the compatible format with its own additions; these
 * pure functions take them out (CONTRACT.md, Native providers):
 * - its content-filter annotations: `prompt_filter_results` on the answer
 *   or on a stream's first chunk, `content_filter_results` and
 *   `content_filter_offsets` on each choice;
 * - the stream's bookkeeping chunks: the first one, with empty `choices`
 *   and only the prompt's filter results, and the annotation-only chunks an
 *   asynchronous filter sends (a choice with neither delta nor finish
 *   reason). A chunk left with no choice and no usage is not forwarded;
 * - a stream whose first forwarded chunk lacks the role gets it
 *   (`delta.role: "assistant"`), once per choice;
 * - its error bodies, which lack `type` or carry `type: null` and write
 *   codes as numbers in strings, become the compatible error object.
 * Its `finish_reason: "content_filter"` is already OpenAI's.
 */
import { GatewayError } from '../../../protocol/errors.js';
import type { Usage } from '../../../protocol/frames.js';
import { usageOf } from '../../response-body.js';
import { errorObject, isRecord, stringOr, textMessage, tryParse } from '../compatible.js';

/** A chat completion without Azure's annotations (changed in place and returned). */
export function normaliseCompletion(answer: Record<string, unknown>): Record<string, unknown> {
  delete answer.prompt_filter_results;
  if (Array.isArray(answer.choices)) for (const choice of answer.choices) if (isRecord(choice)) stripChoice(choice);
  return answer;
}

function stripChoice(choice: Record<string, unknown>): void {
  delete choice.content_filter_results;
  delete choice.content_filter_offsets;
}

/** One stream's normaliser: each event's data in, the data to forward out (null: nothing). */
export class AzureStreamNormaliser {
  /** The choice indexes whose role was forwarded. */
  readonly #roled = new Set<unknown>();
  /** The usage of the stream's usage chunk, once it came. */
  usage: Usage | null = null;

  event(data: string): string | null {
    if (data === '[DONE]') return data;
    const chunk = tryParse(data);
    if (!isRecord(chunk)) throw new GatewayError('upstream_invalid_response', 'the provider stream carried an event whose data is not a JSON object');
    // An in-band error goes on as it is: the commit gate fails the attempt on it, or the client reads it.
    if ('error' in chunk) return data;
    delete chunk.prompt_filter_results;
    if (isRecord(chunk.usage)) this.usage = usageOf(chunk);
    if (Array.isArray(chunk.choices)) {
      const kept: Record<string, unknown>[] = [];
      for (const choice of chunk.choices) {
        if (!isRecord(choice)) continue;
        stripChoice(choice);
        const delta = choice.delta;
        if (!isRecord(delta) && (choice.finish_reason === null || choice.finish_reason === undefined)) continue;
        if (isRecord(delta) && !this.#roled.has(choice.index)) {
          this.#roled.add(choice.index);
          if (delta.role === undefined) choice.delta = { role: 'assistant', ...delta };
        }
        kept.push(choice);
      }
      if (kept.length === 0 && (chunk.usage === null || chunk.usage === undefined)) return null;
      chunk.choices = kept;
    }
    return JSON.stringify(chunk);
  }
}

/** Azure's error body (`{"error":{"code","message"}}`, sometimes with `type: null`, `param`, `innererror`) as the compatible error object. */
export function azureError(status: number, text: string): { readonly contentType: string; readonly body: Uint8Array } {
  const json = tryParse(text);
  const error = isRecord(json) && isRecord(json.error) ? json.error : null;
  if (error === null) return errorObject(status, { message: textMessage(status, text), type: null, code: null, param: null });
  return errorObject(status, {
    message: stringOr(error.message) ?? textMessage(status, ''),
    type: typeof error.type === 'string' ? error.type : null,
    code: stringOr(error.code),
    param: stringOr(error.param),
  });
}
