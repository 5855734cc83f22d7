/**
 * Reading the repository's markdown as GitHub renders it: the prose lines
 * (fenced blocks left out) and the anchors of the headings, for the tests
 * that check links into the docs (docs.test.ts, dashboard.test.ts); and a
 * section's fenced blocks, for the tests that run a README example as
 * written (readme-claude-code.test.ts).
 */

/** The lines of `markdown` outside fenced code blocks, with their line numbers (1-based); fenced lines are null. */
export function proseLines(markdown: string): (string | null)[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && opening) {
      fence = opening;
      return null;
    }
    if (fence !== null) {
      if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') fence = null;
      return null;
    }
    return line;
  });
}

/**
 * GitHub's anchor for a heading (github-slugger): the text as rendered, lower-cased, every
 * character but letters, digits, spaces, `-` and `_` dropped, spaces to `-`.
 */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/`/g, '')
    .replace(/(\*\*|__|\*)/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file has: one per heading, a repeated one suffixed `-1`, `-2`, … as github-slugger does. */
export function anchors(markdown: string): Set<string> {
  const occurrences = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = line === null ? undefined : /^#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    let anchor = base;
    while (occurrences.has(anchor)) {
      const n = (occurrences.get(base) ?? 0) + 1;
      occurrences.set(base, n);
      anchor = `${base}-${n}`;
    }
    occurrences.set(anchor, 0);
  }
  return new Set(occurrences.keys());
}


/** A fenced block: its info string's language (`yaml`, `sh`, `ts`, '' for none) and its text. */
export interface FencedBlock {
  readonly language: string;
  readonly text: string;
}

/**
 * The fenced blocks of the section under `heading` (a whole line, e.g. `## Configuration`), in
 * order, up to the next heading of the same or a higher level.
 */
export function sectionBlocks(markdown: string, heading: string): FencedBlock[] {
  const lines = markdown.split('\n');
  const at = lines.findIndex((line) => line.trim() === heading);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 1;
  const blocks: FencedBlock[] = [];
  let open: { fence: string; language: string; from: number } | null = null;
  for (let i = at + 1; i < lines.length; i++) {
    const line = lines[i] as string;
    if (open === null) {
      const next = /^(#{1,6})\s/.exec(line)?.[1];
      if (next !== undefined && next.length <= level) break;
      const fence = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
      if (fence !== null) open = { fence: fence[1] as string, language: fence[2] ?? '', from: i + 1 };
    } else if (line.trim().startsWith(open.fence) && line.trim().replace(/[`~]/g, '') === '') {
      blocks.push({ language: open.language, text: lines.slice(open.from, i).join('\n') });
      open = null;
    }
  }
  return blocks;
}
