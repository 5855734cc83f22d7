/**
 * Gemini's thought signatures inside the compatible tool call `id`
 * (CONTRACT.md, Native providers: state a provider needs back on the next
 * turn travels inside the tool call `id`). A Gemini 3 model refuses a
 * history whose function calls lost the signature it gave them; a client
 * of the compatible API keeps only `id`, `function.name` and
 * `function.arguments`, and sends the `id` back verbatim, so the signature
 * rides there: `<id>__thought__<signature>`, LiteLLM's layout, so a
 * history written through either gateway reads the same.
 */

export const THOUGHT_SEPARATOR = '__thought__';

/** The compatible id of a function call: `base`, with the part's signature when it has one. */
export function toolCallId(base: string, signature: unknown): string {
  return typeof signature === 'string' && signature.length > 0 ? `${base}${THOUGHT_SEPARATOR}${signature}` : base;
}

/** The signature a compatible id carries, or null. */
export function thoughtSignatureOf(id: string): string | null {
  const at = id.indexOf(THOUGHT_SEPARATOR);
  if (at === -1) return null;
  const signature = id.slice(at + THOUGHT_SEPARATOR.length);
  return signature.length > 0 ? signature : null;
}
