/**
 * The route table: the one place each route is defined. It drives the uWS
 * router (src/front/server.ts), the auth rule of each route, the 404/405
 * answers, and the test that keeps `openapi.yaml` in step with the server.
 */

export type HttpMethod = 'GET' | 'POST';

/** `bearer`: spec 000 Authentication (plus POST /v1/embeddings, CONTRACT.md). */
export type RouteAuth = 'bearer' | 'none';

/** What serves the route. `provider` routes go to the worker pool; the rest are answered on the front thread. */
export type RouteKind =
  | 'chat'
  | 'embeddings'
  | 'models'
  | 'live'
  | 'ready'
  | 'health'
  | 'status'
  | 'status_models'
  | 'status_model'
  | 'metrics';

export interface RouteSpec {
  readonly method: HttpMethod;
  /** OpenAPI-style path: `{name}` marks a path parameter. */
  readonly path: string;
  readonly auth: RouteAuth;
  readonly kind: RouteKind;
  readonly summary: string;
}

export const ROUTES: readonly RouteSpec[] = [
  { method: 'POST', path: '/v1/chat/completions', auth: 'bearer', kind: 'chat', summary: 'Chat completion, streamed as SSE when stream is true' },
  { method: 'POST', path: '/v1/embeddings', auth: 'bearer', kind: 'embeddings', summary: 'Embeddings for a string or an array of strings' },
  { method: 'GET', path: '/v1/models', auth: 'bearer', kind: 'models', summary: 'The configured model_list aliases' },
  { method: 'GET', path: '/health/live', auth: 'none', kind: 'live', summary: 'Liveness: the process answers; runs no checks' },
  { method: 'GET', path: '/health/liveliness', auth: 'none', kind: 'live', summary: 'Liveness (LiteLLM-compatible path); runs no checks' },
  { method: 'GET', path: '/health', auth: 'none', kind: 'health', summary: 'Health report of every registered check' },
  { method: 'GET', path: '/ready', auth: 'none', kind: 'ready', summary: 'Readiness: 200 when at least one route has provider credentials, else 503' },
  { method: 'GET', path: '/status', auth: 'none', kind: 'status', summary: 'Gateway counters and the configured model count' },
  { method: 'GET', path: '/status/models', auth: 'bearer', kind: 'status_models', summary: 'Route and credential status of every alias' },
  { method: 'GET', path: '/status/models/{model}', auth: 'bearer', kind: 'status_model', summary: 'Route and credential status of one alias' },
  { method: 'GET', path: '/metrics', auth: 'none', kind: 'metrics', summary: 'Prometheus text exposition' },
];

/** `/status/models/{model}` → `/status/models/:model`, the uWS pattern syntax. */
export function uwsPattern(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

/** Methods registered on each path, for the `Allow` header of a 405. */
export function methodsByPath(routes: readonly RouteSpec[] = ROUTES): Map<string, HttpMethod[]> {
  const byPath = new Map<string, HttpMethod[]>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? [];
    methods.push(route.method);
    byPath.set(route.path, methods);
  }
  return byPath;
}
