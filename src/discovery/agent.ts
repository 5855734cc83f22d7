/**
 * Discovery (spec 001): the agent description, the manifest with one tool
 * per callable operation, and an HTML summary of the API. All three are
 * generated from the route table once, at start; tool schemas come from
 * the same zod schemas that validate requests.
 */
import { z } from 'zod';
import { ROUTES, type RouteSpec } from '../front/routes.js';
import { PRODUCT, VERSION } from '../../protocol/version.js';

const DESCRIPTION = 'Switchyard: an OpenAI-compatible model gateway that routes chat completions and embeddings to configured providers.';

export const agentDescription = { name: PRODUCT, version: VERSION, description: DESCRIPTION, storage_mode: 'memory' } as const;

/** spec 001, Tool definition: `input` has `type`, `properties` and `required` (empty when nothing is). */
function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<string, unknown>;
  return rest.type === 'object' && !('required' in rest) ? { ...rest, required: [] } : rest;
}

export function buildManifest(routes: readonly RouteSpec[] = ROUTES) {
  return {
    ...agentDescription,
    tools: routes.flatMap((route) => {
      const tool = route.tool;
      if (!tool) return [];
      return [
        {
          name: tool.name,
          description: tool.description,
          method: route.method,
          path: route.path,
          input: jsonSchema(tool.input),
          output: jsonSchema(tool.output),
          scopes: [...tool.scopes],
          effect: tool.effect,
          idempotent: tool.idempotent,
          enqueues_job: tool.enqueuesJob,
          auth: route.auth,
        },
      ];
    }),
  };
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** spec 001: `/docs`, an HTML summary of the current application, from the route table. */
export function buildDocsHtml(routes: readonly RouteSpec[] = ROUTES): string {
  const rows = routes
    .map(
      (r) =>
        `<tr><td><code>${r.method}</code></td><td><code>${escape(r.path)}</code></td><td>${r.auth === 'bearer' ? 'bearer token' : r.auth === 'anthropic' ? 'x-api-key or bearer token' : 'none'}</td><td>${escape(r.summary)}</td><td>${r.tool ? `<code>${escape(r.tool.name)}</code>` : ''}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${PRODUCT} ${VERSION} API</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem}table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.35rem .6rem;text-align:left}th{background:#f4f4f4}</style>
</head><body>
<h1>${PRODUCT} ${VERSION}</h1>
<p>${escape(DESCRIPTION)}</p>
<p>Protected routes take <code>Authorization: Bearer &lt;GATEWAY_API_KEY&gt;</code>. Errors are <code>{"error":{"message","type","code"}}</code>. The machine-readable contract is <code>openapi.yaml</code>; agents read <a href="/agent/manifest"><code>/agent/manifest</code></a>.</p>
<table><thead><tr><th>Method</th><th>Path</th><th>Auth</th><th>What it does</th><th>Tool</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
