/**
 * The Azure normaliser against its golden files (golden/*.json: Azure's
 * wire format in, the compatible form out). UPDATE_GOLDEN=1 rewrites the
 * expected sides (read the diff).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { goldenFiles } from '../golden.js';
import { AzureStreamNormaliser, azureError, normaliseCompletion } from './normalise.js';

const DIR = join(import.meta.dirname, 'golden');

describe('Azure stream → compatible chunks (golden files)', () => {
  for (const golden of goldenFiles<{ about: string; events: unknown[]; chunks: unknown }>(DIR, 'stream-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      const normaliser = new AzureStreamNormaliser();
      const out: unknown[] = [];
      for (const event of golden.case.events) {
        const data = normaliser.event(typeof event === 'string' ? event : JSON.stringify(event));
        if (data !== null) out.push(data === '[DONE]' ? data : JSON.parse(data));
      }
      golden.expectAt('chunks', out);
      const withChoices = out.filter((c): c is { choices: Array<{ delta?: { role?: string } }> } => typeof c === 'object' && (c as { choices: unknown[] }).choices.length > 0);
      // CONTRACT.md, Streams: the first forwarded chunk carries the role, and only it.
      expect(withChoices[0]!.choices[0]!.delta?.role).toBe('assistant');
      expect(withChoices.filter((c) => c.choices[0]!.delta?.role !== undefined)).toHaveLength(1);
      expect(JSON.stringify(out)).not.toMatch(/filter_results|content_filter_offsets/);
    });
  }
});

describe('Azure answers and errors', () => {
  for (const golden of goldenFiles<{ about: string; azure: Record<string, unknown>; chat: unknown }>(DIR, 'response-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      golden.expectAt('chat', normaliseCompletion(structuredClone(golden.case.azure)));
    });
  }
  for (const golden of goldenFiles<{ about: string; status: number; body: string; compatible: unknown }>(DIR, 'error-')) {
    it(`${golden.name}: ${golden.case.about}`, () => {
      golden.expectAt('compatible', JSON.parse(new TextDecoder().decode(azureError(golden.case.status, golden.case.body).body)));
    });
  }
});
