/**
 * A small Dockerfile and .dockerignore reader for the container and
 * deployment tests: enough of the Dockerfile reference to follow this
 * repository's Dockerfile step by step without a Docker engine, and strict
 * about what it does not understand (it throws rather than guess).
 */

export interface Instruction {
  /** Upper-cased: `FROM`, `RUN`, `COPY`, … */
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined, comments removed. */
  readonly args: string;
  /** 1-based line of the keyword in the Dockerfile. */
  readonly line: number;
}

export interface Stage {
  readonly index: number;
  /** The `AS name`, lower-cased, or null. */
  readonly name: string | null;
  /** The `FROM` image with the global ARG defaults substituted. */
  readonly from: string;
  /** The instructions after this stage's FROM. */
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  readonly globalArgs: Readonly<Record<string, string>>;
  readonly stages: readonly Stage[];
}

/** Splits a Dockerfile into instructions: `\` continuations joined, comment lines dropped. */
export function instructions(text: string): Instruction[] {
  const lines = text.split(/\r?\n/);
  const out: Instruction[] = [];
  let current: { line: number; text: string } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    const trimmed = raw.trim();
    // Comment lines are removed before continuations are joined (parser directives are comments too).
    if (trimmed.startsWith('#')) continue;
    if (current === null && trimmed === '') continue;
    const continues = /\\\s*$/.test(raw);
    const piece = continues ? raw.replace(/\\\s*$/, '') : raw;
    if (current === null) current = { line: i + 1, text: piece.trim() };
    else current.text += ` ${piece.trim()}`;
    if (!continues) {
      const match = /^(\S+)\s*([\s\S]*)$/.exec(current.text.trim());
      if (match) out.push({ keyword: (match[1] as string).toUpperCase(), args: (match[2] as string).trim(), line: current.line });
      current = null;
    }
  }
  if (current !== null) throw new Error(`Dockerfile line ${current.line}: the last instruction ends with a line continuation`);
  return out;
}

/** `${NAME}`, `${NAME:-default}`, `${NAME:+alt}` and `$NAME` from `vars`; unknown names become empty, as in Docker. */
export function substitute(text: string, vars: Readonly<Record<string, string | undefined>>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, braced: string | undefined, op: string | undefined, word: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare) as string;
    const value = vars[name];
    if (op === '-') return value ? value : (word ?? '');
    if (op === '+') return value ? (word ?? '') : '';
    return value ?? '';
  });
}

export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: Array<{ index: number; name: string | null; from: string; instructions: Instruction[] }> = [];
  for (const ins of instructions(text)) {
    if (ins.keyword === 'FROM') {
      const words = ins.args.split(/\s+/).filter((w) => !w.startsWith('--platform='));
      const image = substitute(words[0] ?? '', globalArgs);
      const as = words[1]?.toUpperCase() === 'AS' ? (words[2] ?? '').toLowerCase() : null;
      stages.push({ index: stages.length, name: as, from: image, instructions: [] });
    } else if (stages.length === 0) {
      if (ins.keyword !== 'ARG') throw new Error(`Dockerfile line ${ins.line}: ${ins.keyword} before the first FROM`);
      const [name, value] = splitArg(ins.args);
      globalArgs[name] = value ?? '';
    } else {
      (stages.at(-1) as { instructions: Instruction[] }).instructions.push(ins);
    }
  }
  if (stages.length === 0) throw new Error('Dockerfile has no FROM');
  return { globalArgs, stages };
}

/** `NAME=value` or `NAME` → [name, value | undefined]. */
export function splitArg(args: string): [string, string | undefined] {
  const eq = args.indexOf('=');
  if (eq < 0) return [args.trim(), undefined];
  return [args.slice(0, eq).trim(), unquote(args.slice(eq + 1).trim())];
}

function unquote(value: string): string {
  if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) return value.slice(1, -1);
  return value;
}

/** Splits on blanks outside quotes, removing the quotes (shell-like, no escapes beyond `\"`). */
export function words(text: string): string[] {
  const out: string[] = [];
  let word = '';
  let quote: string | null = null;
  let any = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      if (c === '\\' && quote === '"' && i + 1 < text.length) word += text[++i];
      else if (c === quote) quote = null;
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      any = true;
    } else if (/\s/.test(c)) {
      if (word || any) out.push(word);
      word = '';
      any = false;
    } else {
      word += c;
    }
  }
  if (quote) throw new Error(`unterminated quote in: ${text}`);
  if (word || any) out.push(word);
  return out;
}

/** `ENV a=b c="d e"` or the legacy `ENV a b c`. */
export function parseEnv(args: string): Record<string, string> {
  const first = /^[A-Za-z_][A-Za-z0-9_]*(=|\s)/.exec(args);
  if (!first) throw new Error(`cannot read ENV ${args}`);
  if (first[1] !== '=') {
    const space = args.search(/\s/);
    return { [args.slice(0, space)]: args.slice(space).trim() };
  }
  const out: Record<string, string> = {};
  for (const word of words(args)) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new Error(`cannot read ENV ${args}`);
    out[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return out;
}

export interface Command {
  readonly form: 'exec' | 'shell';
  /** For the shell form: the shell words plus the command text. */
  readonly argv: readonly string[];
  /** The text as written. */
  readonly text: string;
}

/** The exec (JSON array) or shell form of RUN, CMD, ENTRYPOINT, HEALTHCHECK CMD. */
export function parseCommand(args: string, shell: readonly string[] = ['/bin/sh', '-c']): Command {
  const text = args.trim();
  if (text.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (Array.isArray(parsed) && parsed.every((p) => typeof p === 'string')) return { form: 'exec', argv: parsed as string[], text };
    // Docker runs a malformed JSON array as a shell command; so do we.
  }
  return { form: 'shell', argv: [...shell, text], text };
}

/** Leading `--name=value` (or `--flag`) options of an instruction, and the rest. */
export function leadingFlags(args: string): { flags: Record<string, string>; rest: string } {
  const flags: Record<string, string> = {};
  let rest = args.trim();
  for (;;) {
    const m = /^--([a-z-]+)(?:=(\S*))?(?:\s+|$)/.exec(rest);
    if (!m) break;
    flags[m[1] as string] = m[2] ?? 'true';
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

export interface Healthcheck {
  readonly options: Readonly<Record<string, string>>;
  readonly command: Command;
}

/** `HEALTHCHECK [--interval=… …] CMD …`; null for `HEALTHCHECK NONE`. */
export function parseHealthcheck(args: string): Healthcheck | null {
  const { flags, rest } = leadingFlags(args);
  if (/^NONE$/i.test(rest)) return null;
  const m = /^CMD\s+([\s\S]+)$/i.exec(rest);
  if (!m) throw new Error(`cannot read HEALTHCHECK ${args}`);
  return { options: flags, command: parseCommand(m[1] as string) };
}

/** Docker durations (`15s`, `1m30s`, `500ms`) in milliseconds. */
export function durationMs(text: string): number {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = text.trim();
  if (!rest) throw new Error('empty duration');
  while (rest) {
    const m = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/.exec(rest);
    if (!m) throw new Error(`cannot read duration ${text}`);
    total += Number(m[1]) * (units[m[2] as string] as number);
    rest = rest.slice(m[0].length);
  }
  return total;
}

export interface CopySpec {
  readonly flags: Readonly<Record<string, string>>;
  readonly sources: readonly string[];
  readonly dest: string;
}

export function parseCopy(args: string): CopySpec {
  const { flags, rest } = leadingFlags(args);
  const command = parseCommand(rest);
  const parts = command.form === 'exec' ? [...command.argv] : words(rest);
  if (parts.length < 2) throw new Error(`COPY needs a source and a destination: ${args}`);
  return { flags, sources: parts.slice(0, -1), dest: parts.at(-1) as string };
}

/** The instructions of a stage with a given keyword. */
export function find(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

/** The stage's ENV as it stands at its end (its own ENV lines; the base image's are not known here). */
export function stageEnv(df: Dockerfile, stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  const args: Record<string, string> = {};
  for (const ins of stage.instructions) {
    if (ins.keyword === 'ARG') {
      const [name, value] = splitArg(ins.args);
      args[name] = value ?? df.globalArgs[name] ?? '';
    } else if (ins.keyword === 'ENV') {
      for (const [k, v] of Object.entries(parseEnv(ins.args))) env[k] = substitute(v, { ...args, ...env });
    }
  }
  return env;
}

/** The image that runs: the last stage. */
export function finalStage(df: Dockerfile): Stage {
  return df.stages.at(-1) as Stage;
}

/** The last value of a single-valued instruction (CMD, USER, STOPSIGNAL, …) in a stage, or null. */
export function last(stage: Stage, keyword: string): Instruction | null {
  return find(stage, keyword).at(-1) ?? null;
}

// ---- .dockerignore -----------------------------------------------------------

interface IgnoreRule {
  readonly negate: boolean;
  readonly regex: RegExp;
}

/**
 * A .dockerignore as a predicate on context-relative paths (`a/b.txt`):
 * Go filepath.Match patterns plus `**`, `!` exceptions, the last matching
 * rule wins, and a path is excluded when it or one of its parent
 * directories is.
 */
export function dockerignore(text: string): (relPath: string) => boolean {
  const rules: IgnoreRule[] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    let line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1).trim();
    line = line.replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
    if (!line) continue;
    rules.push({ negate, regex: globToRegex(line) });
  }
  const matches = (path: string): boolean => {
    let excluded = false;
    for (const rule of rules) if (rule.regex.test(path)) excluded = !rule.negate;
    return excluded;
  };
  return (relPath: string) => {
    const parts = relPath.replace(/^\.\//, '').split('/').filter(Boolean);
    for (let i = 1; i <= parts.length; i++) if (matches(parts.slice(0, i).join('/'))) return true;
    return false;
  };
}

function globToRegex(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i);
      if (end < 0) re += '\\[';
      else {
        re += `[${pattern.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < pattern.length) re += `\\${pattern[++i]}`;
    else re += c.replace(/[.+^${}()|\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
