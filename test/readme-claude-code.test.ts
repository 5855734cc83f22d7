/**
 * The README's "Claude Code and the Anthropic SDK" section, run as written
 * (issue 35): its YAML is the gateway's config with only the upstream
 * addresses added and the keys its variables name given (the OpenAI fake's
 * key, the Bedrock fake's AWS identity); its shell block's variables
 * configure the official `@anthropic-ai/sdk` as Claude Code configures it
 * (ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN as a bearer token, no API
 * key), the address being the only thing replaced; the calls are the ones
 * Claude Code makes (GET /v1/models, a background call on the small model,
 * the main turn streamed with tools, thinking and betas, its tool round
 * trip, count_tokens); and its TypeScript snippet runs in a node process of
 * its own, as a user would run it. A README that says something the
 * gateway does not do fails here.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { AWS_KEYS, BEDROCK_ANTHROPIC_VERSION, startBedrockUpstream, type BedrockUpstream } from './support/bedrock-upstream.js';
import { startFakeUpstream, UPSTREAM_KEY, type FakeUpstream } from './support/fake-upstream.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { sectionBlocks } from './support/markdown.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SECTION = '## Claude Code and the Anthropic SDK';
const blocks = sectionBlocks(readFileSync(join(root, 'README.md'), 'utf8'), SECTION);
const block = (language: string): string => {
  const found = blocks.filter((b) => b.language === language);
  expect(found, `one \`\`\`${language} block in the README's "${SECTION}"`).toHaveLength(1);
  return (found[0] as { text: string }).text;
};
/** The address the README's examples name; the one thing replaced, by the test gateway's. */
const README_ADDRESS = 'http://127.0.0.1:8080';

interface Deployment {
  model_name: string;
  params: Record<string, unknown>;
}

/**
 * The shell block: `export NAME=value` lines (comments dropped, `$NAME` expanded from `env`)
 * and the commands after them.
 */
function shellBlock(text: string, env: Record<string, string>): { exports: Record<string, string>; commands: string[] } {
  const exports: Record<string, string> = {};
  const commands: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    const assignment = /^export\s+([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(line);
    if (assignment === null) {
      commands.push(line);
      continue;
    }
    exports[assignment[1] as string] = (assignment[2] as string).replace(/\$\{?([A-Z_][A-Z0-9_]*)\}?/g, (_, name: string) => env[name] ?? exports[name] ?? '');
  }
  return { exports, commands };
}

// Claude Code's documented request shapes (its LLM gateway page), as test/messages.test.ts replays them.
const BETAS = ['claude-code-20250219', 'interleaved-thinking-2025-05-14', 'fine-grained-tool-streaming-2025-05-14'];
const SYSTEM: Anthropic.Beta.BetaTextBlockParam[] = [
  { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
  { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.', cache_control: { type: 'ephemeral' } },
];
const TOOLS: Anthropic.Beta.BetaTool[] = [
  { name: 'Bash', description: 'Executes a bash command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] }, cache_control: { type: 'ephemeral' } },
];
const METADATA = { user_id: 'user_0123abcd_account__session_5f0c1e2a-1111-2222-3333-444455556666' };
const ASK: Anthropic.Beta.BetaMessageParam = { role: 'user', content: [{ type: 'text', text: 'list the files in src', cache_control: { type: 'ephemeral' } }] };

let openai: FakeUpstream;
let bedrock: BedrockUpstream;
let gw: TestGateway;
let yamlAliases: string[];
let deployments: Deployment[];

beforeAll(async () => {
  [openai, bedrock] = await Promise.all([startFakeUpstream(), startBedrockUpstream()]);
  const config = parseYaml(block('yaml')) as { model_list: Deployment[] };
  deployments = config.model_list;
  yamlAliases = deployments.map((d) => d.model_name);
  // Only the upstream addresses are added: the README's deployments name the real services.
  for (const d of deployments) {
    const provider = String(d.params.model).split('/')[0];
    if (provider === 'bedrock') d.params.api_base = bedrock.url;
    else if (provider === 'openai') d.params.api_base = openai.url;
    else throw new Error(`the README's Claude Code example names a provider this test has no fake for: ${provider}`);
  }
  // The keys where the README says they come from: OPENAI_API_KEY, and the AWS_* variables.
  gw = await startTestGateway({ yaml: toYaml(config), env: { OPENAI_API_KEY: UPSTREAM_KEY, AWS_ACCESS_KEY_ID: AWS_KEYS.accessKeyId, AWS_SECRET_ACCESS_KEY: AWS_KEYS.secretAccessKey } });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([openai?.close(), bedrock?.close()]);
});

describe("the README's Claude Code example", () => {
  it('its config: a Claude model on Bedrock (passed through) and another provider for the small model, each with no key in the file', () => {
    expect(deployments.map((d) => String(d.params.model).split('/')[0]).sort()).toEqual(['bedrock', 'openai']);
    expect(String(deployments.find((d) => String(d.params.model).startsWith('bedrock/'))!.params.model)).toContain('anthropic.');
    expect(gw.config.warnings).toEqual([]);
  });

  it("Claude Code's calls with the SDK configured by the shell block: models, the small model, the main turn streamed with tools, thinking and betas, its tool round trip, count_tokens", async () => {
    const { exports: env, commands } = shellBlock(block('sh'), { GATEWAY_API_KEY: gw.key });
    expect(commands).toEqual(['claude']);
    expect(env.ANTHROPIC_BASE_URL).toBe(README_ADDRESS);
    expect(env.ANTHROPIC_AUTH_TOKEN).toBe(gw.key);
    expect(env.ANTHROPIC_API_KEY).toBe('');
    // Every model variable names an alias of the config above it.
    const models = Object.entries(env).filter(([name]) => /^ANTHROPIC_(MODEL|DEFAULT_\w+_MODEL|SMALL_FAST_MODEL)$/.test(name));
    expect(models.map(([name]) => name).sort()).toEqual(['ANTHROPIC_DEFAULT_HAIKU_MODEL', 'ANTHROPIC_DEFAULT_OPUS_MODEL', 'ANTHROPIC_DEFAULT_SONNET_MODEL', 'ANTHROPIC_MODEL']);
    for (const [name, alias] of models) expect(yamlAliases, name).toContain(alias);
    const main = env.ANTHROPIC_MODEL as string;
    const small = env.ANTHROPIC_DEFAULT_HAIKU_MODEL as string;

    // As Claude Code makes its client from them: the base URL as it is, the auth token as a bearer token, an API key only when set.
    const sent: Headers[] = [];
    const client = new Anthropic({
      baseURL: (env.ANTHROPIC_BASE_URL as string).replace(README_ADDRESS, gw.url),
      authToken: env.ANTHROPIC_AUTH_TOKEN,
      apiKey: env.ANTHROPIC_API_KEY === '' ? null : env.ANTHROPIC_API_KEY,
      defaultHeaders: { 'x-app': 'cli' },
      maxRetries: 0,
      fetch: (url, init) => {
        sent.push(new Headers(init?.headers));
        return fetch(url, init);
      },
    });

    const list = await client.models.list();
    expect(list.data.map((m) => m.id).sort()).toEqual([...yamlAliases].sort());
    expect(list.data[0]).toEqual({ type: 'model', id: expect.any(String), display_name: expect.any(String), created_at: expect.any(String) });
    expect(await client.models.retrieve(main)).toMatchObject({ type: 'model', id: main, display_name: main });

    // A background call on the small model (a title), translated through chat to the OpenAI fake.
    const title = await client.beta.messages.stream({ model: small, max_tokens: 512, temperature: 0, system: [{ type: 'text', text: 'Summarize this coding conversation in under 50 characters.' }], messages: [{ role: 'user', content: 'list the files in src' }], metadata: METADATA, betas: BETAS }).finalMessage();
    // The fake streams `tok0 tok1 tok2 ` whatever it is asked.
    expect(title.content).toMatchObject([{ type: 'text', text: 'tok0 tok1 tok2 ' }]);
    const smallModel = String(deployments.find((d) => d.model_name === small)!.params.model).split('/')[1];
    expect(openai.requests.map((r) => r.json)).toMatchObject([{ model: smallModel, stream: true, messages: [{ role: 'system' }, { role: 'user', content: 'list the files in src' }] }]);

    // The main turn: streamed with tools, thinking and betas, passed through InvokeModelWithResponseStream.
    bedrock.scriptClaude({ kind: 'message', content: [{ type: 'text', text: "I'll list them." }, { type: 'tool_use', id: 'toolu_01Cc', name: 'Bash', input: { command: 'ls src' } }], stopReason: 'tool_use' });
    const turn = await client.beta.messages.stream({ model: main, max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 4000 }, system: SYSTEM, tools: TOOLS, metadata: METADATA, messages: [ASK], betas: BETAS }).finalMessage();
    expect(turn.stop_reason).toBe('tool_use');
    expect(turn.content).toMatchObject([{ type: 'text', text: "I'll list them." }, { type: 'tool_use', id: 'toolu_01Cc', name: 'Bash', input: { command: 'ls src' } }]);
    const [invoked] = bedrock.invocations();
    expect(invoked!.path).toMatch(/\/invoke-with-response-stream$/);
    expect(invoked!.modelId).toBe(String(deployments.find((d) => d.model_name === main)!.params.model).slice('bedrock/'.length));
    expect(invoked!.body).toMatchObject({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, anthropic_beta: BETAS, thinking: { type: 'enabled', budget_tokens: 4000 }, tools: TOOLS, system: SYSTEM, metadata: METADATA });
    expect(String(invoked!.headers.authorization)).toContain(`Credential=${AWS_KEYS.accessKeyId}/`);

    // Its tool round trip.
    const next = await client.beta.messages
      .stream({ model: main, max_tokens: 32000, system: SYSTEM, tools: TOOLS, metadata: METADATA, betas: BETAS, messages: [ASK, { role: 'assistant', content: turn.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Cc', content: 'main.ts\nfront' }] }] })
      .finalMessage();
    expect(next.content).toMatchObject([{ type: 'text' }]);
    expect(bedrock.invocations()).toHaveLength(2);

    // count_tokens: an estimate made by the gateway (no Bedrock call).
    const count = await client.beta.messages.countTokens({ model: main, system: SYSTEM, tools: TOOLS, messages: [ASK], betas: BETAS });
    expect(count.input_tokens).toBeGreaterThan(20);
    expect(bedrock.invocations()).toHaveLength(2);

    // "sent as Authorization: Bearer": every call carried the token that way, and no x-api-key.
    expect(sent.length, "models list and retrieve, the title, the turn, the round trip, the count").toBe(6);
    for (const headers of sent) {
      expect(headers.get('authorization')).toBe(`Bearer ${gw.key}`);
      expect(headers.get('x-api-key')).toBeNull();
      expect(headers.get('anthropic-version')).toBe('2023-06-01');
    }
    expect(bedrock.refused).toEqual([]);
  });

  it('the TypeScript snippet, run as written in a node process of its own (the address replaced), gets its answer from the Claude deployment', async () => {
    const snippet = block('ts').replaceAll(README_ADDRESS, gw.url);
    expect(snippet).not.toContain(README_ADDRESS);
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('ANTHROPIC_')));
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', `${snippet}\nconsole.log(JSON.stringify(message));`], { cwd: root, env: { ...env, GATEWAY_API_KEY: gw.key }, timeout: 30_000 });
    const message = JSON.parse(stdout) as Anthropic.Message;
    expect(message).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello! You said: Hello' }] });
    const invoked = bedrock.invocations().at(-1)!;
    expect(invoked.path).toMatch(/\/invoke$/);
    expect(invoked.body).toMatchObject({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }] });
  });
});
