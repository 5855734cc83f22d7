/**
 * Docs that cannot rot: the README's config example loads through the real
 * config loader with no unsupported-key warning, its route table is the
 * route table, and every relative link in README.md and docs/*.md (and
 * loadtest's notes) reaches a file, and a heading where it names one.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../src/config/load.js';
import { ROUTES } from '../src/front/routes.js';
import { anchors, proseLines } from './support/markdown.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The body of the first fenced block of `language` after the heading `heading` (e.g. `## Configuration`). */
function firstBlockAfter(markdown: string, heading: string, language: string): string {
  const lines = markdown.split('\n');
  const at = lines.findIndex((line) => line.trim() === heading);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const open = lines.findIndex((line, i) => i > at && line.trim() === '```' + language);
  if (open < 0) throw new Error(`no \`\`\`${language} block after "${heading}"`);
  const close = lines.findIndex((line, i) => i > open && line.trim() === '```');
  return lines.slice(open + 1, close).join('\n');
}

/** The link targets of a markdown file's prose (inline links and images; code spans and fenced blocks left out). */
function linkTargets(markdown: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  proseLines(markdown).forEach((text, i) => {
    if (text === null) return;
    const prose = text.replace(/(`+)[^`]*?\1/g, '');
    for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ target: match[1] as string, line: i + 1 });
    }
  });
  return out;
}

/** Why a relative link in `file` does not resolve, or null when it does. */
function brokenLink(file: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return null; // http:, mailto:, … are not ours to check
  const hash = target.indexOf('#');
  const path = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const destination = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(destination)) return `${relative(root, destination)} does not exist`;
  if (anchor === null) return null;
  if (statSync(destination).isDirectory() || !destination.endsWith('.md')) return `#${anchor}: ${relative(root, destination)} is not a markdown file`;
  return anchors(readFileSync(destination, 'utf8')).has(anchor) ? null : `${relative(root, destination)} has no heading with the anchor #${anchor}`;
}

const markdownFiles = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join(root, 'docs', f)),
  ...readdirSync(join(root, 'loadtest')).filter((f) => f.endsWith('.md')).map((f) => join(root, 'loadtest', f)),
  join(root, 'loadtest', 'k6', 'README.md'),
];

describe("the README's config example", () => {
  const yaml = firstBlockAfter(readme, '## Configuration', 'yaml');

  it('loads through the real config loader with no unsupported-key warning', () => {
    const config = parseConfig(yaml, 'README.md', { OPENAI_API_KEY: 'sk-readme' });
    expect(config.warnings).toEqual([]);
  });

  it('has two providers, an alias of two deployments, a route rule, and the server and health settings', () => {
    const { routing } = parseConfig(yaml, 'README.md', { OPENAI_API_KEY: 'sk-readme' });
    const aliases = [...new Set(routing.aliases.map((route) => route.alias))];
    const groups = aliases.map((alias) => routing.aliases.filter((route) => route.alias === alias)).filter((deployments) => deployments.length === 2);
    expect(groups, 'an alias with exactly two deployments').toHaveLength(1);
    const deployments = groups[0] ?? [];
    // The self-hosted server at its own api_base with no key at all, and OpenAI with its key from the environment.
    const keyless = deployments.find((route) => route.credentials.kind === 'not_required');
    const keyed = deployments.find((route) => route.credentials.kind === 'key' && route.credentials.source === 'OPENAI_API_KEY' && route.credentials.key === 'sk-readme');
    expect(keyless?.apiBase, 'a deployment with its own api_base and no api_key').toMatch(/^https?:\/\/(?!api\.openai\.com)/);
    expect(keyed?.apiBase, 'a deployment on OpenAI with api_key: os.environ/OPENAI_API_KEY').toBe('https://api.openai.com/v1');
    expect(routing.rules.length, 'a route_rules entry').toBeGreaterThanOrEqual(1);
    const file = parseYaml(yaml) as Record<string, Record<string, unknown>>;
    expect(Object.keys(file.server ?? {}).length, 'server settings').toBeGreaterThan(0);
    expect(Object.keys(file.health ?? {}).length, 'health settings').toBeGreaterThan(0);
  });
});

describe("the README's replicas example", () => {
  it('loads with no warning: a dns set and a listed set of two replicas', () => {
    const yaml = firstBlockAfter(readme, '### Replicas of a self-hosted server', 'yaml');
    const { routing, warnings } = parseConfig(yaml, 'README.md', {});
    expect(warnings).toEqual([]);
    expect(routing.replicaSets.map((set) => [set.entry.id, set.source])).toEqual([
      ['vllm', 'dns'],
      ['llama-static-0', 'list'],
    ]);
    expect(routing.aliases.map((route) => route.id)).toEqual(['llama-static-0/10.0.0.5:8000', 'llama-static-0/10.0.0.6:8000']);
  });
});

describe("the README's inference-aware example", () => {
  it('loads with no warning: a dns set with server_metrics under inference-aware, its settings the documented defaults', () => {
    const blocks = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    const yaml = blocks.find((block) => block.includes('routing_strategy: inference-aware'));
    if (yaml === undefined) throw new Error('no yaml block of the README routes inference-aware');
    const { routing, warnings } = parseConfig(yaml, 'README.md', {});
    expect(warnings).toEqual([]);
    expect(routing.router.strategy).toBe('inference-aware');
    expect(routing.replicaSets.map((set) => [set.source, set.entry.serverMetrics])).toEqual([['dns', 'vllm']]);
    // The comment says "the defaults": the example's values are the loader's own.
    const defaults = parseConfig('model_list: []\n', 'empty.yaml', {}).routing.router.inference;
    expect(routing.router.inference).toEqual(defaults);
  });
});

describe("the README's Providers example", () => {
  it('loads with no warning and has a deployment of every network provider, and an alias across two', () => {
    const yaml = firstBlockAfter(readme, '## Providers', 'yaml');
    const config = parseConfig(yaml, 'README.md', { OPENAI_API_KEY: 'sk-o', AZURE_API_KEY: 'az', ANTHROPIC_API_KEY: 'sk-ant', GEMINI_API_KEY: 'AIza-g', AWS_ACCESS_KEY_ID: 'AKIA', AWS_SECRET_ACCESS_KEY: 'aws-secret' });
    expect(config.warnings).toEqual([]);
    expect(new Set(config.routing.aliases.map((route) => route.provider))).toEqual(new Set(['openai', 'azure', 'anthropic', 'gemini', 'bedrock', 'mock']));
    const chat = config.routing.aliases.filter((route) => route.alias === 'chat');
    expect(new Set(chat.map((route) => route.provider)).size).toBe(2);
    expect(config.routing.aliases.every((route) => route.credentials.kind !== 'missing')).toBe(true);
  });
});

describe("the README's route table", () => {
  const section = readme.slice(readme.indexOf('\n## Routes\n'));
  const end = section.indexOf('\n## ', 1);
  const rows = proseLines(end < 0 ? section : section.slice(0, end))
    .map((line) => (line === null ? undefined : /^\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` \| (\w+) \|/.exec(line)))
    .filter((match) => match !== undefined && match !== null)
    .map((match) => `${match[1]} ${match[2]} ${match[3]}`);

  it('lists every route of src/front/routes.ts once, with its auth, and nothing else', () => {
    expect([...rows].sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path} ${r.auth}`).sort());
  });
});

describe('relative links in the docs', () => {
  it.each(markdownFiles.map((file) => [relative(root, file), file]))('%s: every relative link reaches its file and heading', (_name, file) => {
    const broken = linkTargets(readFileSync(file, 'utf8'))
      .map(({ target, line }) => ({ line, target, why: brokenLink(file, target) }))
      .filter((link) => link.why !== null)
      .map((link) => `line ${link.line}: (${link.target}) ${link.why}`);
    expect(broken).toEqual([]);
  });

  it('computes anchors as GitHub does, and the link extraction sees what it should', () => {
    const doc = '# Shutdown: the drain\n## Reload (SIGHUP)\n### Why `status` and `status_class` both\n## Sizing\n## Sizing\n```sh\n# not a heading\n```\n## Fixed since the first run, and two limitations\n';
    expect([...anchors(doc)]).toEqual(['shutdown-the-drain', 'reload-sighup', 'why-status-and-status_class-both', 'sizing', 'sizing-1', 'fixed-since-the-first-run-and-two-limitations']);
    const links = linkTargets('[a](x.md#b) `[c](not-a-link.md)` ![img](p.png "title")\n```\n[d](in-code.md)\n```\n[e](https://example.com)');
    expect(links.map((l) => l.target)).toEqual(['x.md#b', 'p.png', 'https://example.com']);
    expect(brokenLink(join(root, 'README.md'), 'docs/OPERATIONS.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenLink(join(root, 'README.md'), 'docs/NO-SUCH-FILE.md')).toMatch(/does not exist/);
    expect(brokenLink(join(root, 'README.md'), '#configuration')).toBeNull();
  });
});
