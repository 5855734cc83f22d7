/**
 * The prompt's prefix blocks (CONTRACT.md, "Inference-aware routing",
 * Prefix affinity): each message contributes its role and its content as
 * received (JSON text for non-string content), in order; that text is cut
 * into blocks of `prefix_block_chars` characters (UTF-16 code units, as a
 * JS string counts them), only whole blocks, at most 256; each block is
 * hashed with the hash of the blocks before it as the seed, so equal hashes
 * at block i mean equal text up to the end of block i.
 *
 * Both threads use it: a worker at the pick, the replica simulator (test/)
 * to key its KV cache with the same blocks. Nothing here is shared memory.
 *
 * The hash is xxh32 from `xxhash-wasm` (docs/ARCHITECTURE.md, "Inference-aware
 * routing", has the measurements that chose it). It is
 * called once per block on a Uint8Array view made once per block position, so a
 * pick allocates nothing per block: the text is written into one reused buffer
 * as UTF-16LE (two bytes per character, lossless, so block i always starts at
 * byte 2·i·prefix_block_chars) and `h32Raw` reads the block's view.
 *
 * Hashes are 32-bit, as Int32 (the index keeps them in an Int32Array under
 * Atomics); 0 is the index's empty mark, so a block hash of 0 is stored as 1.
 * A false match needs a 32-bit collision among one replica's ≤ 65,536 blocks
 * at the exact block where the real prefix ends: about 1.5e-5 per pick, and
 * it costs one block of score, never a wrong answer.
 */
import xxhash from 'xxhash-wasm';

/** At most this many blocks of a prompt are hashed (CONTRACT.md: "at most 256"). */
export const MAX_PREFIX_BLOCKS = 256;

/** Between a message's role and its content, and after its content: neither can run into the next. */
const ROLE_END = '\u001f';
const MESSAGE_END = '\u001e';

/** A prompt's block hashes, filled by `PromptHasher.hash`; made once per thread and reused. */
export interface PromptBlocks {
  /** Block i's chained hash at [i], never 0; only [0, count) is meaningful. */
  readonly hashes: Int32Array;
  /** Whole blocks hashed (0 when the prompt is shorter than one block). */
  count: number;
  /** Characters of the prompt's text, counted to the cap (256 blocks) and no further. */
  chars: number;
}

/** A message as parsed from a chat request: only `role` and `content` count. */
export interface PromptMessage {
  readonly role?: unknown;
  readonly content?: unknown;
}

export interface PromptHasher {
  readonly blockChars: number;
  /**
   * Hashes the messages' blocks into `out` and returns the block count.
   * Allocates nothing per block; a message whose content is not a string
   * costs one JSON.stringify.
   *
   * @example
   *   const hasher = await loadPromptHasher(64);
   *   const blocks = promptBlocks();
   *   hasher.hash([{ role: 'system', content: longPrompt }, { role: 'user', content: 'hi' }], blocks);
   *   // blocks.hashes.subarray(0, blocks.count) are the chained block hashes
   */
  hash(messages: readonly PromptMessage[], out: PromptBlocks): number;
}

/** A reusable result for `PromptHasher.hash`. */
export function promptBlocks(): PromptBlocks {
  return { hashes: new Int32Array(MAX_PREFIX_BLOCKS), count: 0, chars: 0 };
}

/** The text a message's content contributes: itself when a string, its JSON text otherwise, nothing when absent. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === undefined) return '';
  return JSON.stringify(content) ?? '';
}

/**
 * A hasher for blocks of `blockChars` characters. Loads the WebAssembly hash
 * once (a few ms: call it at a thread's start, not per request).
 */
export async function loadPromptHasher(blockChars: number): Promise<PromptHasher> {
  if (!Number.isInteger(blockChars) || blockChars < 1) throw new RangeError(`prefix_block_chars must be a positive integer (got ${blockChars})`);
  const { h32Raw } = await xxhash();
  const blockBytes = blockChars * 2;
  const capacityBytes = MAX_PREFIX_BLOCKS * blockBytes;
  const bytes = Buffer.alloc(capacityBytes);
  // One view per block position, made here so hashing a block allocates nothing.
  const views: Uint8Array[] = [];
  for (let i = 0; i < MAX_PREFIX_BLOCKS; i++) views.push(new Uint8Array(bytes.buffer, bytes.byteOffset + i * blockBytes, blockBytes));

  /** Appends `text` at byte `at`, as far as the buffer goes; returns the new end. */
  const append = (text: string, at: number): number => (at >= capacityBytes || text.length === 0 ? at : at + bytes.write(text, at, capacityBytes - at, 'utf16le'));

  return {
    blockChars,
    hash(messages, out) {
      let at = 0;
      for (let m = 0; m < messages.length && at < capacityBytes; m++) {
        const message = messages[m];
        if (message === null || typeof message !== 'object') continue;
        const role = message.role;
        at = append(typeof role === 'string' ? role : contentText(role), at);
        at = append(ROLE_END, at);
        at = append(contentText(message.content), at);
        at = append(MESSAGE_END, at);
      }
      const count = Math.floor(at / blockBytes);
      const hashes = out.hashes;
      let seed = 0;
      for (let i = 0; i < count; i++) {
        const h = h32Raw(views[i] as Uint8Array, seed);
        seed = h;
        hashes[i] = h === 0 ? 1 : h | 0;
      }
      out.count = count;
      out.chars = at >> 1;
      return count;
    },
  };
}
