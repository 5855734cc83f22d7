/**
 * Reading the repository's markdown as GitHub renders it: the prose lines
 * (fenced blocks left out) and the anchors of the headings, for the tests
 * that check links into the docs (docs.test.ts, dashboard.test.ts).
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

