/**
 * Keeps `openapi.yaml` in step with the route table (src/front/routes.ts),
 * the error catalogue (protocol/errors.ts) and package.json (STYLE.md, practice 4:
 * derived artefacts are checked, not trusted). CONTRACT.md: "`openapi.yaml`
 * at the repository root describes every route".
 */
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ERROR_TYPE, ERRORS, errorBody, isErrorCode } from '../protocol/errors.ts';
import { ROUTES, type RouteKind, type RouteSpec } from '../src/front/routes.ts';
import { WORKER_REASONS, workerModeReport } from '../src/config/workers.ts';

type Obj = Record<string, unknown>;

const ROOT = new URL('../', import.meta.url);
const SOURCE = readFileSync(new URL('openapi.yaml', ROOT), 'utf8');
const DOC = parse(SOURCE) as Obj;
const PKG = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { version: string };

/** The methods an OpenAPI 3.1 path item can hold. */
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** CONTRACT.md, HTTP: the provider rate-limit headers forwarded to callers. */
const RATE_LIMIT_ALLOWLIST = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-requests',
  'x-ratelimit-reset-tokens',
  'retry-after',
  'retry-after-ms',
];

/** What the 200 answer of each kind of route carries: a `components.schemas` name per media type. */
const OK_CONTENT: Record<RouteKind, Record<string, string | null>> = {
  chat: { 'application/json': 'ChatCompletion', 'text/event-stream': null },
  embeddings: { 'application/json': 'EmbeddingList' },
  responses: { 'application/json': 'ResponseObject', 'text/event-stream': null },
  messages: { 'application/json': 'Message', 'text/event-stream': null },
  count_tokens: { 'application/json': 'CountTokensResponse' },
  models: { 'application/json': 'ModelList' },
  model: { 'application/json': 'Model' },
  live: { 'application/json': 'Health' },
  health: { 'application/json': 'HealthReport' },
  ready: { 'application/json': 'HealthReport' },
  status: { 'application/json': 'GatewayStatus' },
  status_models: { 'application/json': 'ModelStatusList' },
  status_model: { 'application/json': 'ModelStatus' },
  metrics: { 'text/plain': null },
  agent: { 'application/json': 'AgentDescription' },
  manifest: { 'application/json': 'AgentManifest' },
  docs: { 'text/html': null },
};

/** Routes that forward a body to a provider: spec 000 Rules 1–4 and CONTRACT.md apply to them. */
const PROVIDER_KINDS: ReadonlySet<RouteKind> = new Set(['chat', 'embeddings', 'responses']);

/** The request body schema of each provider route. */
const REQUEST_SCHEMAS: Partial<Record<RouteKind, string>> = { chat: 'ChatCompletionRequest', embeddings: 'EmbeddingRequest', responses: 'ResponseCreateRequest', messages: 'MessageCreateRequest', count_tokens: 'CountTokensRequest' };

/** Anthropic's Messages routes: every error in Anthropic's shape (CONTRACT.md, Anthropic Messages API (inbound)). */
const ANTHROPIC_KINDS: ReadonlySet<RouteKind> = new Set(['messages', 'count_tokens']);
/** The Anthropic error type each documented status of those routes must show (protocol/anthropic-errors.ts). */
const ANTHROPIC_STATUSES: ReadonlyArray<readonly [string, string]> = [
  ['400', 'invalid_request_error'],
  ['401', 'authentication_error'],
  ['404', 'not_found_error'],
  ['413', 'request_too_large'],
  ['429', 'rate_limit_error'],
  ['502', 'api_error'],
  ['503', 'overloaded_error'],
];

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function obj(value: unknown, where: string): Obj {
  if (!isObj(value)) throw new Error(`${where}: expected an object, got ${JSON.stringify(value)}`);
  return value;
}

/** Follows local `$ref`s (`#/a/b`) until a node that is not a reference. */
function deref(doc: Obj, node: unknown): unknown {
  let current = node;
  for (let hops = 0; isObj(current) && typeof current.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error(`$ref loop at ${String(current.$ref)}`);
    const ref = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are expected, got ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce<unknown>((at, key) => (isObj(at) ? at[key] : undefined), doc);
    if (current === undefined) throw new Error(`dangling $ref ${ref}`);
  }
  return current;
}

interface Operation {
  method: string;
  path: string;
  op: Obj;
}

function operationsOf(doc: Obj): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
    const pathItem = obj(deref(doc, item), `paths.${path}`);
    for (const method of HTTP_METHODS) {
      if (pathItem[method] !== undefined) out.push({ method: method.toUpperCase(), path, op: obj(pathItem[method], `${method} ${path}`) });
    }
  }
  return out;
}

const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

/** Route keys on one side and not the other, in both directions. */
function diffRoutes(routes: readonly Pick<RouteSpec, 'method' | 'path'>[], doc: Obj): { missingFromOpenapi: string[]; missingFromRoutes: string[] } {
  const inRoutes = new Set(routes.map((r) => key(r.method, r.path)));
  const inDoc = new Set(operationsOf(doc).map((o) => key(o.method, o.path)));
  return {
    missingFromOpenapi: [...inRoutes].filter((k) => !inDoc.has(k)).sort(),
    missingFromRoutes: [...inDoc].filter((k) => !inRoutes.has(k)).sort(),
  };
}

function operationFor(route: RouteSpec): Obj | undefined {
  return operationsOf(DOC).find((o) => o.method === route.method && o.path === route.path)?.op;
}

function responsesOf(op: Obj, where: string): Record<string, Obj> {
  const responses = obj(op.responses, `${where}.responses`);
  return Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, obj(deref(DOC, r), `${where}.responses.${status}`)]));
}

/** Every value shown for a media type: `example` and each `examples.*.value`. */
function examplesOf(mediaType: Obj): unknown[] {
  const out: unknown[] = [];
  if ('example' in mediaType) out.push(mediaType.example);
  if (isObj(mediaType.examples)) {
    for (const example of Object.values(mediaType.examples)) out.push(obj(deref(DOC, example), 'example').value);
  }
  return out;
}

/** `{ error: { code, type } }` bodies among the examples of a response. */
function errorExamplesOf(response: Obj): { code: unknown; type: unknown }[] {
  const out: { code: unknown; type: unknown }[] = [];
  for (const mediaType of Object.values(isObj(response.content) ? response.content : {})) {
    for (const value of examplesOf(obj(mediaType, 'media type'))) {
      if (isObj(value) && isObj(value.error)) out.push({ code: value.error.code, type: value.error.type });
    }
  }
  return out;
}

/** Walks the whole document: every `{error:{code}}` example, and every enum/const given for a `code` property. */
function codesNamedIn(doc: unknown): { exampleCodes: Map<string, unknown>; schemaCodes: unknown[] } {
  const exampleCodes = new Map<string, unknown>();
  const schemaCodes: unknown[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!isObj(node)) return;
    if (isObj(node.error) && 'code' in node.error && 'message' in node.error) exampleCodes.set(String(node.error.code), node.error.type);
    if (isObj(node.properties) && node.properties.code !== undefined) {
      const code = obj(deref(DOC, node.properties.code), 'code schema');
      if (Array.isArray(code.enum)) schemaCodes.push(...code.enum);
      if ('const' in code) schemaCodes.push(code.const);
    }
    Object.values(node).forEach(walk);
  };
  walk(doc);
  return { exampleCodes, schemaCodes };
}

describe('openapi.yaml', () => {
  describe('document', () => {
    it('is a valid OpenAPI 3.1 document', async () => {
      expect(DOC.openapi).toBe('3.1.0');
      const validator = new Validator();
      const result = await validator.validate(structuredClone(DOC));
      expect(result.errors).toBeUndefined();
      expect(result.valid).toBe(true);
      expect(validator.version).toBe('3.1');
    });

    it('is rejected by the validator when broken (the check is live)', async () => {
      const danglingRef = structuredClone(DOC);
      obj(obj(obj(danglingRef.paths, 'paths')['/v1/models'], 'path').get, 'op').responses = { '200': { $ref: '#/components/responses/Nope' } };
      expect((await new Validator().validate(danglingRef)).valid).toBe(false);

      const badScheme = structuredClone(DOC);
      obj(obj(badScheme.components, 'components').securitySchemes, 'securitySchemes').bearer = { type: 'token' };
      expect((await new Validator().validate(badScheme)).valid).toBe(false);
    });

    it('is titled Switchyard and carries the package version', () => {
      const info = obj(DOC.info, 'info');
      expect(info.title).toBe('Switchyard');
      expect(info.version).toBe(PKG.version);
    });
  });

  describe('GatewayStatus', () => {
    it('worker_mode is exactly what /status and the listening line print (src/config/workers.ts)', () => {
      const schemas = obj(obj(DOC.components, 'components').schemas, 'schemas');
      const status = obj(obj(schemas.GatewayStatus, 'GatewayStatus').properties, 'GatewayStatus.properties');
      const mode = obj(deref(DOC, status.worker_mode), 'worker_mode');
      const fields = Object.keys(workerModeReport({ workers: 0, reason: 'cpus', cpus: 1 })).sort();
      expect(Object.keys(obj(mode.properties, 'WorkerMode.properties')).sort()).toEqual(fields);
      expect([...(mode.required as string[])].sort()).toEqual(fields);
      expect(mode.additionalProperties).toBe(false);
      expect(obj(obj(mode.properties, 'WorkerMode.properties').reason, 'reason').enum).toEqual([...WORKER_REASONS]);
    });
  });

  describe('routes', () => {
    it('the route table has no duplicate method+path', () => {
      const keys = ROUTES.map((r) => key(r.method, r.path));
      expect(new Set(keys).size).toBe(keys.length);
    });

    it('lists exactly the routes of ROUTES, no more, no fewer', () => {
      expect(diffRoutes(ROUTES, DOC)).toEqual({ missingFromOpenapi: [], missingFromRoutes: [] });
    });

    it('the comparison catches an extra route on either side', () => {
      const extraRoute = [...ROUTES, { method: 'POST' as const, path: '/v1/completions' }];
      expect(diffRoutes(extraRoute, DOC).missingFromOpenapi).toContain('POST /v1/completions');

      const extraOperation = structuredClone(DOC);
      obj(obj(extraOperation.paths, 'paths')['/v1/models'], 'path').post = { responses: { '200': { description: 'x' } } };
      expect(diffRoutes(ROUTES, extraOperation).missingFromRoutes).toContain('POST /v1/models');
    });

    it('declares the bearer security scheme', () => {
      const schemes = obj(obj(DOC.components, 'components').securitySchemes, 'securitySchemes');
      expect(schemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    });

    describe.each(ROUTES.map((route) => [key(route.method, route.path), route] as const))('%s', (_name, route) => {
      const found = operationFor(route);
      if (!found) {
        // Reported here and by the route comparison above; the checks below need the operation.
        it('is in openapi.yaml', () => expect.fail(`openapi.yaml has no operation for ${key(route.method, route.path)}`));
        return;
      }
      const op = found;
      const responses = responsesOf(op, key(route.method, route.path));

      it('has the summary of the route table and an operationId', () => {
        expect(op.summary).toBe(route.summary);
        expect(typeof op.operationId).toBe('string');
      });

      it(`security matches auth: ${route.auth}`, () => {
        expect(op.security).toEqual(route.auth === 'bearer' ? [{ bearer: [] }] : route.auth === 'anthropic' ? [{ bearer: [] }, { apiKey: [] }] : []);
        if (route.auth === 'anthropic') {
          expect(responses['401'], 'an anthropic route documents 401').toBeDefined();
          return;
        }
        if (route.auth === 'bearer') {
          expect(responses['401'], 'a bearer route documents 401').toBeDefined();
          expect(errorExamplesOf(responses['401']!).map((e) => e.code)).toContain('invalid_api_key');
        } else {
          expect(responses['401'], 'an open route has no 401').toBeUndefined();
        }
      });

      it('declares each path parameter', () => {
        const names = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        const params = (Array.isArray(op.parameters) ? op.parameters : []).map((p) => obj(deref(DOC, p), 'parameter'));
        const pathParams = params.filter((p) => p.in === 'path');
        expect(pathParams.map((p) => p.name).sort()).toEqual(names.sort());
        for (const p of pathParams) expect(p.required).toBe(true);
      });

      it('takes an optional X-Request-ID header', () => {
        const params = (Array.isArray(op.parameters) ? op.parameters : []).map((p) => obj(deref(DOC, p), 'parameter'));
        const requestId = params.find((p) => p.in === 'header' && String(p.name).toLowerCase() === 'x-request-id');
        expect(requestId).toBeDefined();
        expect(requestId?.required).not.toBe(true);
      });

      it('every response carries Server and X-Request-ID', () => {
        for (const [status, response] of Object.entries(responses)) {
          const headers = isObj(response.headers) ? response.headers : {};
          expect(headers.Server, `${status}: Server`).toEqual({ $ref: '#/components/headers/Server' });
          expect(headers['X-Request-ID'], `${status}: X-Request-ID`).toEqual({ $ref: '#/components/headers/X-Request-ID' });
        }
      });

      it(`answers 200 with the ${route.kind} body`, () => {
        const expected = OK_CONTENT[route.kind];
        expect(expected, `OK_CONTENT has no entry for kind ${route.kind}`).toBeDefined();
        const content = obj(responses['200']?.content, '200 content');
        expect(Object.keys(content).sort()).toEqual(Object.keys(expected).sort());
        for (const [mediaType, schemaName] of Object.entries(expected)) {
          const schema = obj(obj(content[mediaType], mediaType).schema, `${mediaType} schema`);
          if (schemaName === null) expect(schema.type).toBe('string');
          else expect(schema).toEqual({ $ref: `#/components/schemas/${schemaName}` });
        }
      });

      if (ANTHROPIC_KINDS.has(route.kind)) {
        it("documents every error status in Anthropic's shape, typed by status, and its request body", () => {
          for (const [status, type] of ANTHROPIC_STATUSES) {
            const response = responses[status];
            expect(response, status).toBeDefined();
            const json = obj(obj(response!.content, `${status} content`)['application/json'], `${status} json`);
            expect(json.schema).toEqual({ $ref: '#/components/schemas/AnthropicErrorResponse' });
            const types = examplesOf(json).map((value) => (isObj(value) && isObj(value.error) ? value.error.type : null));
            expect(types, status).toEqual([type]);
          }
          const body = obj(obj(obj(op.requestBody, 'requestBody').content, 'content')['application/json'], 'json body');
          expect(body.schema).toEqual({ $ref: `#/components/schemas/${REQUEST_SCHEMAS[route.kind]}` });
        });
      }

      if (PROVIDER_KINDS.has(route.kind)) {
        it('documents the provider-route errors (400, 404 model_not_found, 413, 502) and the rate-limit headers', () => {
          for (const status of ['400', '401', '404', '413', '502']) expect(responses[status], status).toBeDefined();
          expect(errorExamplesOf(responses['404']!).map((e) => e.code)).toContain('model_not_found');
          expect(errorExamplesOf(responses['413']!).map((e) => e.code)).toContain('body_too_large');
          for (const status of ['200', '400', '404', '4XX']) {
            const headers = obj(responses[status]?.headers, `${status} headers`);
            for (const name of RATE_LIMIT_ALLOWLIST) expect(headers[name], `${status}: ${name}`).toEqual({ $ref: `#/components/headers/${name}` });
          }
          const body = obj(obj(obj(op.requestBody, 'requestBody').content, 'content')['application/json'], 'json body');
          expect(body.schema).toEqual({ $ref: `#/components/schemas/${REQUEST_SCHEMAS[route.kind]}` });
        });
      }
    });
  });

  describe('schemas', () => {
    const schemas = obj(obj(DOC.components, 'components').schemas, 'components.schemas');

    it('HealthReport has the optional age_ms (integer) and stale (boolean) of a cached or stale report', () => {
      const report = obj(schemas.HealthReport, 'HealthReport');
      const properties = obj(report.properties, 'HealthReport.properties');
      expect(obj(properties.age_ms, 'age_ms').type).toBe('integer');
      expect(obj(properties.stale, 'stale').type).toBe('boolean');
      expect(report.required).toEqual(expect.arrayContaining(['status', 'checks', 'timestamp', 'probe_type']));
      expect(report.required).not.toContain('age_ms');
      expect(report.required).not.toContain('stale');
    });

    it('AgentDescription, AgentManifest and Tool carry the fields of spec 001', () => {
      const description = obj(schemas.AgentDescription, 'AgentDescription');
      expect([...(description.required as string[])].sort()).toEqual(['description', 'name', 'storage_mode', 'version']);
      const manifest = JSON.stringify(schemas.AgentManifest);
      expect(manifest).toContain(JSON.stringify({ $ref: '#/components/schemas/AgentDescription' }));
      expect(manifest).toContain(JSON.stringify({ $ref: '#/components/schemas/Tool' }));
      const tool = obj(schemas.Tool, 'Tool');
      expect([...(tool.required as string[])].sort()).toEqual(['description', 'effect', 'enqueues_job', 'idempotent', 'input', 'name', 'output', 'scopes']);
      const properties = obj(tool.properties, 'Tool.properties');
      expect(obj(properties.effect, 'effect').enum).toEqual(['read', 'write']);
      expect(obj(properties.idempotent, 'idempotent').type).toBe('boolean');
      expect(obj(properties.enqueues_job, 'enqueues_job').type).toBe('boolean');
    });
  });

  describe('headers', () => {
    const headers = obj(obj(DOC.components, 'components').headers, 'components.headers');

    it('documents Server, X-Request-ID, the routing headers and exactly the rate-limit allowlist of CONTRACT.md', () => {
      expect(headers.Server).toBeDefined();
      expect(headers['X-Request-ID']).toBeDefined();
      const routing = Object.keys(headers).filter((name) => name.startsWith('x-switchyard-'));
      expect(routing.sort()).toEqual(['x-switchyard-attempts', 'x-switchyard-deployment', 'x-switchyard-fallback', 'x-switchyard-overhead-ms']);
      const rateLimit = Object.keys(headers).filter((name) => !['Server', 'X-Request-ID', 'Allow', ...routing].includes(name));
      expect(rateLimit.sort()).toEqual([...RATE_LIMIT_ALLOWLIST].sort());
    });

    it('the Server example names this version', () => {
      expect(obj(headers.Server, 'Server').example).toBe(`switchyard/${PKG.version}`);
    });
  });

  describe('errors', () => {
    const schemas = obj(obj(DOC.components, 'components').schemas, 'components.schemas');
    const catalogue = Object.keys(ERRORS);

    it('GatewayErrorCode enumerates exactly the catalogue codes', () => {
      const codeEnum = obj(schemas.GatewayErrorCode, 'GatewayErrorCode').enum as unknown[];
      expect(new Set(codeEnum).size, 'no duplicates').toBe(codeEnum.length);
      expect(codeEnum.filter((c) => !isErrorCode(c)), 'in openapi, not in protocol/errors.ts').toEqual([]);
      expect(catalogue.filter((c) => !codeEnum.includes(c)), 'in protocol/errors.ts, not in openapi').toEqual([]);
    });

    it('every code named anywhere in the document is a catalogue code', () => {
      const { exampleCodes, schemaCodes } = codesNamedIn(DOC);
      expect(schemaCodes.length).toBeGreaterThan(0);
      expect(schemaCodes.filter((c) => !isErrorCode(c))).toEqual([]);
      // A provider error passed through keeps its own type and code; every error the gateway makes uses the catalogue.
      const gatewayExamples = [...exampleCodes].filter(([, type]) => type === ERROR_TYPE).map(([code]) => code);
      expect(gatewayExamples.length).toBeGreaterThan(0);
      expect(gatewayExamples.filter((c) => !isErrorCode(c))).toEqual([]);
    });

    it('each gateway error example sits under the status the catalogue gives its code', () => {
      for (const { method, path, op } of operationsOf(DOC)) {
        for (const [status, response] of Object.entries(responsesOf(op, key(method, path)))) {
          for (const { code, type } of errorExamplesOf(response)) {
            if (type !== ERROR_TYPE) continue;
            expect(isErrorCode(code), `${key(method, path)} ${status}: ${String(code)}`).toBe(true);
            if (isErrorCode(code)) expect(String(ERRORS[code].status), `${key(method, path)}: ${code}`).toBe(status);
          }
        }
      }
      // Responses not attached to an operation (unknown route, wrong method).
      const responses = obj(obj(DOC.components, 'components').responses, 'components.responses');
      expect(errorExamplesOf(obj(responses.RouteNotFound, 'RouteNotFound')).map((e) => e.code)).toEqual(['route_not_found']);
      expect(errorExamplesOf(obj(responses.MethodNotAllowed, 'MethodNotAllowed')).map((e) => e.code)).toEqual(['method_not_allowed']);
      expect(obj(obj(responses.MethodNotAllowed, 'MethodNotAllowed').headers, 'headers').Allow).toBeDefined();
    });

    it('ErrorResponse describes the body errorBody() makes', () => {
      const error = obj(obj(obj(schemas.ErrorResponse, 'ErrorResponse').properties, 'properties').error, 'error');
      const required = (error.required as string[]).slice().sort();
      expect(obj(error.properties, 'error.properties').code).toEqual({ type: ['string', 'null'] });
      const gateway = obj(schemas.GatewayErrorResponse, 'GatewayErrorResponse');
      const narrowed = JSON.stringify(gateway);
      expect(narrowed).toContain(JSON.stringify({ const: ERROR_TYPE }));
      expect(narrowed).toContain(JSON.stringify({ $ref: '#/components/schemas/GatewayErrorCode' }));
      for (const code of catalogue) {
        const body = JSON.parse(errorBody(code as keyof typeof ERRORS)) as { error: Obj };
        expect(Object.keys(body)).toEqual(['error']);
        expect(Object.keys(body.error).sort()).toEqual(required);
        expect(body.error.type).toBe(ERROR_TYPE);
      }
    });
  });
});
