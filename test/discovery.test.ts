/**
 * Discovery (spec 001): GET /agent, GET /agent/manifest and GET /docs on the
 * running gateway, without authentication, generated from the route table
 * and its zod schemas, and in step with openapi.yaml.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { ROUTES, type RouteSpec, type ToolSpec } from '../src/front/routes.ts';
import { useGateway } from './support/gateway.js';

type Obj = Record<string, unknown>;

const ROOT = new URL('../', import.meta.url);
const PKG = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { name: string; version: string };
const OPENAPI = parse(readFileSync(new URL('openapi.yaml', ROOT), 'utf8')) as { components: { schemas: Record<string, Obj> } };

interface ToolJson {
  name: string;
  description: string;
  input: Obj;
  output: Obj;
  scopes: string[];
  effect: string;
  idempotent: boolean;
  enqueues_job: boolean;
  [key: string]: unknown;
}

const TOOL_ROUTES = ROUTES.filter((r): r is RouteSpec & { tool: ToolSpec } => r.tool !== undefined);

/** What the manifest must say a zod schema is: its JSON Schema, without `$schema`. */
function jsonSchemaOf(schema: z.ZodType): Obj {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { unrepresentable: 'any' }) as Obj;
  return rest;
}

describe('discovery endpoints', () => {
  const { gw } = useGateway({ upstreams: 0 });
  let agent: { status: number; type: string | null; body: Obj };
  let manifest: { status: number; type: string | null; body: Obj & { tools: ToolJson[] } };
  let docs: { status: number; type: string | null; text: string };

  beforeAll(async () => {
    const a = await gw.fetch('/agent', { auth: false });
    agent = { status: a.status, type: a.headers.get('content-type'), body: (await a.json()) as Obj };
    const m = await gw.fetch('/agent/manifest', { auth: false });
    manifest = { status: m.status, type: m.headers.get('content-type'), body: (await m.json()) as Obj & { tools: ToolJson[] } };
    const d = await gw.fetch('/docs', { auth: false });
    docs = { status: d.status, type: d.headers.get('content-type'), text: await d.text() };
  });

  describe('GET /agent', () => {
    it('answers 200 JSON without authentication', () => {
      expect(agent.status).toBe(200);
      expect(agent.type).toMatch(/^application\/json/);
    });

    it('is {name, version from package.json, description, storage_mode: memory}', () => {
      expect(Object.keys(agent.body).sort()).toEqual(['description', 'name', 'storage_mode', 'version']);
      expect(agent.body.name).toBe(PKG.name);
      expect(agent.body.version).toBe(PKG.version);
      expect(typeof agent.body.description).toBe('string');
      expect((agent.body.description as string).length).toBeGreaterThan(10);
      expect(agent.body.storage_mode).toBe('memory');
    });

    it('a bad bearer token does not matter (the route is open)', async () => {
      const res = await gw.fetch('/agent', { headers: { authorization: 'Bearer wrong' } });
      expect(res.status).toBe(200);
    });
  });

  describe('GET /agent/manifest', () => {
    it('answers 200 JSON without authentication', () => {
      expect(manifest.status).toBe(200);
      expect(manifest.type).toMatch(/^application\/json/);
    });

    it('carries every field of the agent description, with the same values', () => {
      for (const [key, value] of Object.entries(agent.body)) expect(manifest.body[key], key).toEqual(value);
      expect(Array.isArray(manifest.body.tools)).toBe(true);
    });

    it('has one tool per route with tool metadata, named as in the route table', () => {
      expect(TOOL_ROUTES.length).toBeGreaterThan(0);
      expect(manifest.body.tools.map((t) => t.name).sort()).toEqual(TOOL_ROUTES.map((r) => r.tool.name).sort());
      expect(new Set(manifest.body.tools.map((t) => t.name)).size).toBe(manifest.body.tools.length);
    });

    it('every tool has name, description, input and output schemas, scopes, effect read|write, idempotent and enqueues_job booleans', () => {
      for (const tool of manifest.body.tools) {
        expect(typeof tool.name, tool.name).toBe('string');
        expect(typeof tool.description, tool.name).toBe('string');
        expect(tool.description.length, tool.name).toBeGreaterThan(0);
        expect(Array.isArray(tool.scopes), tool.name).toBe(true);
        expect(tool.scopes.length, tool.name).toBeGreaterThan(0);
        for (const scope of tool.scopes) expect(typeof scope).toBe('string');
        expect(['read', 'write'], tool.name).toContain(tool.effect);
        expect(typeof tool.idempotent, tool.name).toBe('boolean');
        expect(typeof tool.enqueues_job, tool.name).toBe('boolean');
        for (const side of ['input', 'output'] as const) {
          const schema = tool[side];
          expect(schema.type, `${tool.name}.${side}.type`).toBe('object');
          expect(typeof schema.properties, `${tool.name}.${side}.properties`).toBe('object');
          expect(schema).not.toHaveProperty('$schema');
        }
      }
    });

    it('every tool input lists `required` as an array of names (spec 001, Tool definition: type, properties, required)', () => {
      for (const tool of manifest.body.tools) {
        expect(Array.isArray(tool.input.required), `${tool.name}.input.required = ${JSON.stringify(tool.input.required)}`).toBe(true);
        for (const name of tool.input.required as unknown[]) expect(Object.keys(tool.input.properties as Obj)).toContain(name);
      }
    });

    it('scopes, effect, idempotent and enqueues_job match the route table', () => {
      for (const route of TOOL_ROUTES) {
        const tool = manifest.body.tools.find((t) => t.name === route.tool.name)!;
        expect(tool.scopes, tool.name).toEqual([...route.tool.scopes]);
        expect(tool.effect, tool.name).toBe(route.tool.effect);
        expect(tool.idempotent, tool.name).toBe(route.tool.idempotent);
        expect(tool.enqueues_job, tool.name).toBe(route.tool.enqueuesJob);
      }
    });

    it('input and output are the JSON Schemas generated from the route table zod schemas', () => {
      for (const route of TOOL_ROUTES) {
        const tool = manifest.body.tools.find((t) => t.name === route.tool.name)!;
        // An empty `required` may be spelled out (see the test above) or left out, as zod does.
        const withRequired = (schema: Obj) => ({ ...schema, required: schema.required ?? [] });
        expect(withRequired(tool.input), `${tool.name}.input`).toEqual(withRequired(jsonSchemaOf(route.tool.input)));
        expect(tool.output, `${tool.name}.output`).toEqual(jsonSchemaOf(route.tool.output));
      }
    });

    it('the schemas say what the operations need: chat needs model and messages, embeddings model and input', () => {
      const tool = (name: string) => manifest.body.tools.find((t) => t.name === name)!;
      const chat = tool('create_chat_completion');
      expect(chat.input.required).toEqual(expect.arrayContaining(['model']));
      expect((chat.input.properties as Obj).model).toMatchObject({ type: 'string' });
      expect((chat.input.properties as Obj).messages).toMatchObject({ type: 'array' });
      expect(chat.effect).toBe('write');
      const embed = tool('create_embeddings');
      expect(embed.input.required).toEqual(expect.arrayContaining(['model', 'input']));
      expect(embed.effect).toBe('write');
      expect(tool('get_model_status').input).toMatchObject({ type: 'object', properties: { model: { type: 'string' } }, required: ['model'] });
      for (const name of ['list_models', 'get_gateway_status', 'list_model_status', 'get_model_status']) expect(tool(name).effect, name).toBe('read');
      for (const t of manifest.body.tools) expect(t.enqueues_job, t.name).toBe(false);
    });

    it('the manifest is described by openapi.yaml: every required field of AgentManifest/Tool is present', () => {
      const schemas = OPENAPI.components.schemas;
      const toolRequired = (schemas.Tool!.required as string[]) ?? [];
      const descriptionRequired = (schemas.AgentDescription!.required as string[]) ?? [];
      expect(toolRequired.length).toBeGreaterThan(0);
      for (const key of descriptionRequired) expect(agent.body, key).toHaveProperty(key);
      for (const key of [...descriptionRequired, 'tools']) expect(manifest.body, key).toHaveProperty(key);
      for (const tool of manifest.body.tools) for (const key of toolRequired) expect(tool, `${tool.name}.${key}`).toHaveProperty(key);
    });
  });

  describe('GET /docs', () => {
    it('answers 200 HTML without authentication', () => {
      expect(docs.status).toBe(200);
      expect(docs.type).toMatch(/^text\/html/);
      expect(docs.text.toLowerCase()).toMatch(/^<!doctype html>/);
      expect(docs.text).toContain('</html>');
    });

    it('names every route of the route table, with its method and summary', () => {
      for (const route of ROUTES) {
        expect(docs.text, route.path).toContain(route.path);
        const row = docs.text.split('\n').find((line) => line.includes(`<code>${route.path}</code>`) && line.includes(`<code>${route.method}</code>`));
        expect(row, `${route.method} ${route.path}`).toBeDefined();
      }
      for (const summary of new Set(ROUTES.map((r) => r.summary))) {
        const escaped = summary.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
        expect(docs.text.includes(summary) || docs.text.includes(escaped), summary).toBe(true);
      }
    });

    it('names the application and its version', () => {
      expect(docs.text).toContain(PKG.name);
      expect(docs.text).toContain(PKG.version);
    });
  });
});
