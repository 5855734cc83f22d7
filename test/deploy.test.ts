/**
 * The Kubernetes manifests in deploy/kubernetes/ (issue 4) against the
 * server they deploy: probe paths and auth from the route table, ports from
 * the server default and the Dockerfile, drain timing from the settings the
 * process actually reads (parseConfig on the ConfigMap with the pod's env),
 * and the wiring between objects (labels, selectors, names, Secret refs).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, parseConfig } from '../src/config/load.js';
import { ROUTES, type RouteKind, type RouteSpec } from '../src/front/routes.js';
import { finalStage, last, parseDockerfile, stageEnv } from './dockerfile.js';

const ROOT = resolve(import.meta.dirname, '..');
const DIR = join(ROOT, 'deploy/kubernetes');
const DOCKERFILE = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));

// The manifests are plain data, read loosely.
type Obj = Record<string, any>;

interface Manifest {
  readonly file: string;
  readonly doc: Obj;
}

const FILES = readdirSync(DIR)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();

function load(): { manifests: Manifest[]; kustomization: Obj | null; errors: string[] } {
  const manifests: Manifest[] = [];
  const errors: string[] = [];
  let kustomization: Obj | null = null;
  for (const file of FILES) {
    for (const d of parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))) {
      for (const e of d.errors) errors.push(`${file}: ${e.message}`);
      const doc = d.toJS() as Obj | null;
      if (doc === null || doc === undefined) continue;
      if (doc.kind === 'Kustomization') kustomization = doc;
      else manifests.push({ file, doc });
    }
  }
  return { manifests, kustomization, errors };
}

const { manifests: MANIFESTS, kustomization: KUSTOMIZATION, errors: PARSE_ERRORS } = load();

function only(kind: string): Manifest {
  const found = MANIFESTS.filter((m) => m.doc.kind === kind);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}, found ${found.length}`);
  return found[0] as Manifest;
}

const deployment = () => only('Deployment').doc;
const podSpec = (): Obj => deployment().spec.template.spec;
const podLabels = (): Record<string, string> => deployment().spec.template.metadata.labels;
const container = (): Obj => {
  const containers = podSpec().containers as Obj[];
  return containers.find((c) => c.name === 'switchyard') ?? (containers[0] as Obj);
};
const containerPort = (): Obj => {
  const ports = container().ports as Obj[];
  expect(ports.length, 'the gateway container declares its port').toBeGreaterThan(0);
  return ports.find((p) => p.name === 'http') ?? (ports[0] as Obj);
};

/** A probe's or Service's port (number or container port name) as a number. */
function resolvePort(port: number | string): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = (container().ports as Obj[]).find((p) => p.name === port);
  if (!named) throw new Error(`no container port named "${port}"`);
  return named.containerPort as number;
}

function route(path: string): RouteSpec | undefined {
  return ROUTES.find((r) => r.method === 'GET' && r.path === path);
}

/** True when every label of `selector` is on `labels`. */
function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function envEntry(name: string): Obj | undefined {
  return (container().env as Obj[] | undefined)?.find((e) => e.name === name);
}

/** CPU quantity in cores: `2`, `500m`, `1.5`. */
function cores(q: string | number): number {
  const s = String(q);
  return s.endsWith('m') ? Number(s.slice(0, -1)) / 1000 : Number(s);
}

/** Memory quantity in bytes: `256Mi`, `1Gi`, `500M`, plain bytes. */
function bytes(q: string | number): number {
  const m = /^(\d+(?:\.\d+)?)([KMGTE]i?)?$/.exec(String(q));
  if (!m) throw new Error(`cannot read memory quantity ${q}`);
  const unit = m[2] ?? '';
  const pow: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, T: 1e12, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Ei: 2 ** 60 };
  return Number(m[1]) * (pow[unit] as number);
}

/** Seconds a preStop hook sleeps: `exec: [sleep, N]`, `sh -c "sleep N"`, or the `sleep:` action. */
function preStopSleepSeconds(): number {
  const preStop = container().lifecycle?.preStop as Obj | undefined;
  if (!preStop) throw new Error('the container has no preStop hook');
  if (preStop.sleep) return Number(preStop.sleep.seconds);
  const command = (preStop.exec?.command ?? []) as string[];
  const text = command.join(' ');
  const m = /(?:^|\s|\/)sleep\s+(\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new Error(`preStop is not a sleep: ${JSON.stringify(preStop)}`);
  return Number(m[1]);
}

const SECRET_PLACEHOLDER = /^(REPLACE[_-]?ME|CHANGE[_-]?ME|<[^>]+>)?$/i;
/** Shapes of real provider and platform credentials. */
const REAL_LOOKING_KEYS: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{20,}/, // OpenAI and look-alikes
  /\bsk-ant-[A-Za-z0-9_-]{10,}/, // Anthropic
  /\bgsk_[A-Za-z0-9]{20,}/, // Groq
  /\bAKIA[0-9A-Z]{16}\b/, // AWS
  /\bAIza[0-9A-Za-z_-]{35}\b/, // Google
  /\bgh[pousr]_[A-Za-z0-9]{30,}/, // GitHub
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/, // Slack
  /\bhf_[A-Za-z0-9]{30,}/, // Hugging Face
];

/** The pod's environment as the process would see it, with each Secret value stood in for by a placeholder. */
function podEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of (container().env ?? []) as Obj[]) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = `secret-${String(e.valueFrom.secretKeyRef.key)}`;
  }
  return env;
}

/** The config file the pod reads: the ConfigMap key mounted where GATEWAY_CONFIG points. */
function mountedConfig(): { path: string; text: string; configMap: Obj } {
  const path = envEntry('GATEWAY_CONFIG')?.value as string | undefined;
  if (!path) throw new Error('GATEWAY_CONFIG is not set to a literal path');
  for (const mount of (container().volumeMounts ?? []) as Obj[]) {
    const volume = ((podSpec().volumes ?? []) as Obj[]).find((v) => v.name === mount.name);
    if (!volume?.configMap) continue;
    const cm = MANIFESTS.find((m) => m.doc.kind === 'ConfigMap' && m.doc.metadata.name === volume.configMap.name)?.doc;
    if (!cm) throw new Error(`ConfigMap ${volume.configMap.name} is mounted but not defined in deploy/kubernetes/`);
    const items = (volume.configMap.items as Obj[] | undefined) ?? Object.keys(cm.data ?? {}).map((key) => ({ key, path: key }));
    for (const item of items) {
      const filePath = mount.subPath ? (mount.subPath === item.path ? mount.mountPath : null) : posix.join(mount.mountPath, item.path);
      if (filePath === path) return { path, text: cm.data[item.key] as string, configMap: cm };
    }
  }
  throw new Error(`GATEWAY_CONFIG=${path} is not a file of a mounted ConfigMap`);
}

describe('deploy/kubernetes manifests', () => {
  it('every file parses as YAML (multi-document), and every object is named', () => {
    expect(FILES.length).toBeGreaterThan(0);
    expect(PARSE_ERRORS).toEqual([]);
    for (const { file, doc } of MANIFESTS) {
      expect(typeof doc.apiVersion, `${file}: apiVersion`).toBe('string');
      expect(typeof doc.kind, `${file}: kind`).toBe('string');
      expect(typeof doc.metadata?.name, `${file}: metadata.name`).toBe('string');
    }
    for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ConfigMap', 'ServiceMonitor']) expect(() => only(kind)).not.toThrow();
  });

  it('kustomization.yaml applies every plain manifest, and neither the Secret template nor CRD-based objects', () => {
    expect(KUSTOMIZATION, 'deploy/kubernetes/kustomization.yaml').not.toBeNull();
    const listed = new Set<string>(KUSTOMIZATION!.resources as string[]);
    for (const file of listed) expect(FILES, `kustomization resource ${file}`).toContain(file);
    for (const file of new Set(MANIFESTS.map((m) => m.file))) {
      const docs = MANIFESTS.filter((m) => m.file === file).map((m) => m.doc);
      const holdsSecret = docs.some((d) => d.kind === 'Secret');
      const needsCrd = docs.some((d) => !/^(v1|apps\/v1|autoscaling\/v2|policy\/v1|networking\.k8s\.io\/v1)$/.test(String(d.apiVersion)));
      expect(listed.has(file), `${file} ${holdsSecret ? 'holds a Secret template' : needsCrd ? 'needs a CRD' : 'is a plain manifest'}`).toBe(!holdsSecret && !needsCrd);
    }
  });

  it('the Deployment selects its own pod template', () => {
    expect(deployment().apiVersion).toBe('apps/v1');
    expect(selects(deployment().spec.selector.matchLabels, podLabels())).toBe(true);
  });

  it("the container port is the server's default port and the image's PORT", () => {
    const port = containerPort();
    expect(port.containerPort).toBe(DEFAULTS.port);
    const image = stageEnv(DOCKERFILE, finalStage(DOCKERFILE));
    expect(Number(image.PORT ?? DEFAULTS.port), 'Dockerfile ENV PORT').toBe(port.containerPort);
    const envPort = envEntry('PORT');
    if (envPort) expect(Number(envPort.value)).toBe(port.containerPort);
  });

  describe('probes', () => {
    const probes = () => ({ startup: container().startupProbe as Obj, liveness: container().livenessProbe as Obj, readiness: container().readinessProbe as Obj });

    it('all three are httpGet probes on unauthenticated GET routes of the route table, on the container port', () => {
      for (const [name, probe] of Object.entries(probes())) {
        expect(probe, `${name}Probe`).toBeDefined();
        const path = probe.httpGet?.path as string;
        const r = route(path);
        expect(r, `${name}Probe path ${path} is a GET route in ROUTES`).toBeDefined();
        expect(r!.auth, `${name}Probe ${path} needs no bearer token`).toBe('none');
        const port = resolvePort(probe.httpGet.port);
        expect(port, `${name}Probe port`).toBe(containerPort().containerPort);
        expect(port, `${name}Probe port`).toBe(DEFAULTS.port);
      }
    });

    it('liveness (and startup, which gates it) is /health/live: it runs no checks, so provider trouble never restarts a pod', () => {
      const { liveness, startup } = probes();
      expect(liveness.httpGet.path).toBe('/health/live');
      expect(['/health', '/ready']).not.toContain(liveness.httpGet.path);
      expect(route(startup.httpGet.path)?.kind).toBe<RouteKind>('live');
    });

    it("readiness is /ready, with a timeout above the gateway's probe budget (it answers within that budget)", () => {
      const { readiness } = probes();
      expect(readiness.httpGet.path).toBe('/ready');
      expect(route('/ready')?.kind).toBe<RouteKind>('ready');
      const config = parseConfig(mountedConfig().text, 'configmap', podEnv());
      expect((readiness.timeoutSeconds ?? 1) * 1000).toBeGreaterThan(config.health.probeBudgetMs);
    });
  });

  it('drain: terminationGracePeriodSeconds > preStop sleep + GATEWAY_DRAIN_DELAY + GATEWAY_DRAIN_TIMEOUT', () => {
    const grace = podSpec().terminationGracePeriodSeconds as number;
    expect(typeof grace).toBe('number');
    const sleep = preStopSleepSeconds();
    expect(sleep).toBeGreaterThan(0);
    // The drain settings as the process reads them: env over config file over defaults.
    const config = parseConfig(mountedConfig().text, 'configmap', podEnv());
    expect(typeof config.drainDelayMs, 'GatewayConfig.drainDelayMs').toBe('number');
    expect(typeof config.drainTimeoutMs, 'GatewayConfig.drainTimeoutMs').toBe('number');
    const env = podEnv();
    if (env.GATEWAY_DRAIN_DELAY !== undefined) expect(config.drainDelayMs).toBe(Number(env.GATEWAY_DRAIN_DELAY) * 1000);
    if (env.GATEWAY_DRAIN_TIMEOUT !== undefined) expect(config.drainTimeoutMs).toBe(Number(env.GATEWAY_DRAIN_TIMEOUT) * 1000);
    expect(grace * 1000).toBeGreaterThan(sleep * 1000 + config.drainDelayMs + config.drainTimeoutMs);
  });

  it('config: a ConfigMap mounted read-only as a file, GATEWAY_CONFIG pointing at it, and it validates', () => {
    const { text } = mountedConfig();
    const mount = (container().volumeMounts as Obj[]).find((m) => envEntry('GATEWAY_CONFIG')!.value.startsWith(m.mountPath));
    expect(mount?.readOnly).toBe(true);
    const config = parseConfig(text, 'configmap', podEnv());
    expect(config.warnings).toEqual([]);
    expect(config.routing.aliases.length).toBeGreaterThan(0);
    // Every key the config names with os.environ/… is given to the pod, from the Secret.
    for (const name of [...text.matchAll(/os\.environ\/([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] as string)) {
      expect(envEntry(name)?.valueFrom?.secretKeyRef, `${name} comes from a Secret`).toBeDefined();
    }
    // With the Secret's keys present, at least one route has credentials: /ready can be 200.
    expect([...config.routing.aliases, ...config.routing.rules].some((r) => r.credentials.kind !== 'missing')).toBe(true);
  });

  it('GATEWAY_WORKERS is set and fits the CPU limit (Node sees the node, not the limit), and resources are bounded', () => {
    const { requests, limits } = container().resources as { requests: Obj; limits: Obj };
    for (const r of ['cpu', 'memory']) {
      expect(requests?.[r], `requests.${r}`).toBeDefined();
      expect(limits?.[r], `limits.${r}`).toBeDefined();
    }
    expect(cores(requests.cpu)).toBeLessThanOrEqual(cores(limits.cpu));
    expect(bytes(requests.memory)).toBeLessThanOrEqual(bytes(limits.memory));
    const workers = Number(envEntry('GATEWAY_WORKERS')?.value);
    expect(Number.isInteger(workers) && workers >= 1, 'GATEWAY_WORKERS').toBe(true);
    expect(workers).toBeLessThanOrEqual(Math.ceil(cores(limits.cpu)));
  });

  it('runs as the image USER, non-root, with a read-only root filesystem', () => {
    const pod = podSpec().securityContext as Obj;
    const c = container().securityContext as Obj;
    expect(c?.runAsNonRoot ?? pod?.runAsNonRoot).toBe(true);
    const uid = (c?.runAsUser ?? pod?.runAsUser) as number;
    expect(uid).toBeGreaterThan(0);
    const user = last(finalStage(DOCKERFILE), 'USER')?.args.trim() ?? '';
    if (/^\d+(:\d+)?$/.test(user)) expect(uid).toBe(Number(user.split(':')[0]));
    expect(c?.readOnlyRootFilesystem).toBe(true);
    expect(c?.allowPrivilegeEscalation).toBe(false);
  });

  describe('secrets', () => {
    it('GATEWAY_API_KEYS and provider keys come from a Secret by reference; no key-like variable has a literal value', () => {
      const keys = envEntry('GATEWAY_API_KEYS') ?? envEntry('GATEWAY_API_KEY');
      expect(keys?.valueFrom?.secretKeyRef, 'the gateway bearer keys come from a Secret').toBeDefined();
      // Required: without it every pod would generate its own random key.
      expect(keys!.valueFrom.secretKeyRef.optional ?? false).toBe(false);
      for (const e of (container().env ?? []) as Obj[]) {
        if (/KEY|TOKEN|SECRET|PASSWORD/i.test(e.name)) {
          expect(e.value, `${e.name} has no literal value`).toBeUndefined();
          expect(e.valueFrom?.secretKeyRef, `${e.name} is a secretKeyRef`).toBeDefined();
        }
      }
    });

    it('no manifest inlines a real-looking key; a Secret in deploy/ is a template of placeholders matching the refs', () => {
      for (const file of FILES) {
        const text = readFileSync(join(DIR, file), 'utf8');
        for (const re of REAL_LOOKING_KEYS) expect(re.test(text), `${file} matches ${re}`).toBe(false);
      }
      const refs = ((container().env ?? []) as Obj[]).map((e) => e.valueFrom?.secretKeyRef).filter(Boolean) as Obj[];
      const secretNames = new Set(refs.map((r) => r.name as string));
      for (const secret of MANIFESTS.filter((m) => m.doc.kind === 'Secret')) {
        expect(secret.doc.data, `${secret.file}: no base64 data`).toBeUndefined();
        for (const [k, v] of Object.entries((secret.doc.stringData ?? {}) as Record<string, string>)) expect(v, `${secret.file}: ${k} is a placeholder`).toMatch(SECRET_PLACEHOLDER);
        if (secretNames.has(secret.doc.metadata.name)) {
          for (const ref of refs.filter((r) => r.name === secret.doc.metadata.name)) expect(Object.keys(secret.doc.stringData ?? {}), `${secret.file} has ${ref.key}`).toContain(ref.key);
        }
      }
      // The ConfigMap never holds a literal api_key.
      const config = parseConfig(mountedConfig().text, 'configmap', podEnv());
      for (const r of [...config.routing.aliases, ...config.routing.rules]) expect(r.credentials, 'api_key is an os.environ/ reference').not.toMatchObject({ source: 'literal' });
    });
  });

  it('the Service selects the pods and targets the container port', () => {
    const svc = only('Service').doc;
    expect(selects(svc.spec.selector, podLabels())).toBe(true);
    const ports = svc.spec.ports as Obj[];
    expect(ports.length).toBeGreaterThan(0);
    for (const p of ports) expect(resolvePort(p.targetPort ?? p.port)).toBe(containerPort().containerPort);
  });

  it('the HPA (autoscaling/v2, CPU) scales the Deployment, which requests CPU', () => {
    const hpa = only('HorizontalPodAutoscaler').doc;
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment().metadata.name });
    const cpu = (hpa.spec.metrics as Obj[]).find((m) => m.type === 'Resource' && m.resource?.name === 'cpu');
    expect(cpu?.resource.target.type).toBe('Utilization');
    expect(cpu?.resource.target.averageUtilization).toBeGreaterThan(0);
    expect(cpu?.resource.target.averageUtilization).toBeLessThanOrEqual(100);
    expect(container().resources?.requests?.cpu, 'utilisation is relative to the CPU request').toBeDefined();
    expect(hpa.spec.maxReplicas).toBeGreaterThanOrEqual(hpa.spec.minReplicas ?? 1);
    const replicas = deployment().spec.replicas as number | undefined;
    if (replicas !== undefined) {
      expect(replicas).toBeGreaterThanOrEqual(hpa.spec.minReplicas ?? 1);
      expect(replicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    }
  });

  it('the PDB selects the pods and still lets a node drain at the minimum replica count', () => {
    const pdb = only('PodDisruptionBudget').doc;
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(selects(pdb.spec.selector.matchLabels, podLabels())).toBe(true);
    const min = (only('HorizontalPodAutoscaler').doc.spec.minReplicas ?? 1) as number;
    if (pdb.spec.minAvailable !== undefined) {
      expect(typeof pdb.spec.minAvailable === 'number' ? pdb.spec.minAvailable : 0).toBeLessThan(min);
    } else {
      expect(pdb.spec.maxUnavailable).toBeDefined();
    }
  });

  it('scrape annotations on the pod template point at /metrics on the container port', () => {
    const a = deployment().spec.template.metadata.annotations as Record<string, string>;
    expect(a['prometheus.io/scrape']).toBe('true');
    expect(a['prometheus.io/path']).toBe('/metrics');
    expect(route('/metrics')).toMatchObject({ auth: 'none', kind: 'metrics' });
    expect(Number(a['prometheus.io/port'])).toBe(containerPort().containerPort);
  });

  it('the ServiceMonitor selects the Service and scrapes /metrics through a named Service port that reaches the container port', () => {
    const sm = only('ServiceMonitor').doc;
    const svc = only('Service').doc;
    expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(selects(sm.spec.selector.matchLabels, svc.metadata.labels ?? {})).toBe(true);
    const endpoints = sm.spec.endpoints as Obj[];
    expect(endpoints.length).toBeGreaterThan(0);
    for (const ep of endpoints) {
      expect(ep.path).toBe('/metrics');
      const port = (svc.spec.ports as Obj[]).find((p) => p.name === ep.port);
      expect(port, `Service port named ${ep.port}`).toBeDefined();
      expect(resolvePort(port!.targetPort ?? port!.port)).toBe(containerPort().containerPort);
    }
  });
});

/** The optional Redis in deploy/kubernetes/redis/ (issue 37): applied on its own, beside the gateway. */
describe('deploy/kubernetes/redis (optional)', () => {
  const REDIS_DIR = join(DIR, 'redis');
  const redisFiles = readdirSync(REDIS_DIR).filter((f) => /\.ya?ml$/.test(f)).sort();
  const docs: Manifest[] = [];
  const errors: string[] = [];
  let kustomization: Obj | null = null;
  for (const file of redisFiles) {
    for (const d of parseAllDocuments(readFileSync(join(REDIS_DIR, file), 'utf8'))) {
      for (const e of d.errors) errors.push(`${file}: ${e.message}`);
      const doc = d.toJS() as Obj | null;
      if (doc === null || doc === undefined) continue;
      if (doc.kind === 'Kustomization') kustomization = doc;
      else docs.push({ file, doc });
    }
  }
  const one = (kind: string): Obj => {
    const found = docs.filter((m) => m.doc.kind === kind);
    if (found.length !== 1) throw new Error(`expected exactly one ${kind} in deploy/kubernetes/redis/, found ${found.length}`);
    return (found[0] as Manifest).doc;
  };
  const redisDeployment = () => one('Deployment');
  const redisPodLabels = (): Record<string, string> => redisDeployment().spec.template.metadata.labels;
  const redisContainer = (): Obj => (redisDeployment().spec.template.spec.containers as Obj[])[0] as Obj;
  /** The value after `flag` in the container's command line, or undefined. */
  const arg = (flag: string): string | undefined => {
    const args = [...((redisContainer().command ?? []) as string[]), ...((redisContainer().args ?? []) as string[])];
    const i = args.indexOf(flag);
    return i === -1 ? undefined : args[i + 1];
  };
  const redisPort = (): number => Number(arg('--port') ?? 6379);
  const resolveRedisPort = (port: number | string): number => {
    if (typeof port === 'number') return port;
    const named = (redisContainer().ports as Obj[]).find((p) => p.name === port);
    if (!named) throw new Error(`no redis container port named "${port}"`);
    return named.containerPort as number;
  };

  it('parses; a Deployment, a Service and a NetworkPolicy, each named, all labelled alike', () => {
    expect(errors).toEqual([]);
    expect(docs.map((m) => m.doc.kind).sort()).toEqual(['Deployment', 'NetworkPolicy', 'Service']);
    const labels = redisPodLabels();
    expect(labels['app.kubernetes.io/part-of']).toBe('switchyard');
    for (const { file, doc } of docs) {
      expect(typeof doc.metadata?.name, `${file}: ${doc.kind} metadata.name`).toBe('string');
      expect(doc.metadata.labels, `${doc.kind} ${doc.metadata.name}: the pods' labels`).toEqual(labels);
    }
  });

  it('its kustomization applies redis.yaml; the gateway kustomization leaves it out (optional) and says how to add it', () => {
    expect(kustomization?.resources).toEqual(redisFiles.filter((f) => f !== 'kustomization.yaml'));
    expect(KUSTOMIZATION!.resources as string[]).not.toContain('redis');
    expect(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8')).toMatch(/redis\//);
  });

  it('the Deployment selects its own pods, one at a time (replicas 1, Recreate)', () => {
    const d = redisDeployment();
    expect(d.apiVersion).toBe('apps/v1');
    expect(selects(d.spec.selector.matchLabels, redisPodLabels())).toBe(true);
    expect(d.spec.replicas).toBe(1);
    expect(d.spec.strategy?.type).toBe('Recreate');
  });

  it("the gateway's selectors never take a Redis pod, nor Redis' a gateway pod", () => {
    const gatewaySelectors: Array<[string, Record<string, string>]> = [
      ['gateway Deployment', deployment().spec.selector.matchLabels],
      ['gateway Service', only('Service').doc.spec.selector],
      ['gateway PDB', only('PodDisruptionBudget').doc.spec.selector.matchLabels],
      ['`kubectl get pods -l app.kubernetes.io/name=switchyard` (docs/OPERATIONS.md, Reload)', { 'app.kubernetes.io/name': 'switchyard' }],
    ];
    for (const [what, selector] of gatewaySelectors) expect(selects(selector, redisPodLabels()), what).toBe(false);
    expect(selects(one('Service').spec.selector, podLabels())).toBe(false);
    expect(selects(redisDeployment().spec.selector.matchLabels, podLabels())).toBe(false);
  });

  it("the Service selects the Redis pods, and its port reaches Redis' port; the probes ask that port", () => {
    const svc = one('Service');
    expect(svc.spec.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(selects(svc.spec.selector, redisPodLabels())).toBe(true);
    const ports = svc.spec.ports as Obj[];
    expect(ports).toHaveLength(1);
    expect(resolveRedisPort((ports[0] as Obj).targetPort ?? (ports[0] as Obj).port)).toBe(redisPort());
    expect((ports[0] as Obj).port).toBe(redisPort());
    const readiness = redisContainer().readinessProbe as Obj;
    expect(readiness, 'a readiness probe').toBeDefined();
    const command = ((readiness.exec?.command ?? []) as string[]).join(' ');
    expect(command).toMatch(/redis-cli -p (\d+) ping/);
    expect(Number(/redis-cli -p (\d+)/.exec(command)?.[1])).toBe(redisPort());
    expect(resolveRedisPort(redisContainer().livenessProbe.tcpSocket.port)).toBe(redisPort());
  });

  it('no persistence: no snapshots, no AOF, no PersistentVolumeClaim; bounded resources, maxmemory under the memory limit', () => {
    expect(arg('--save')).toBe('');
    expect(arg('--appendonly')).toBe('no');
    const volumes = (redisDeployment().spec.template.spec.volumes ?? []) as Obj[];
    for (const v of volumes) expect(v.persistentVolumeClaim, `volume ${v.name}`).toBeUndefined();
    expect(docs.some((m) => m.doc.kind === 'PersistentVolumeClaim' || m.doc.kind === 'StatefulSet')).toBe(false);
    const { requests, limits } = redisContainer().resources as { requests: Obj; limits: Obj };
    for (const r of ['cpu', 'memory']) {
      expect(requests?.[r], `requests.${r}`).toBeDefined();
      expect(limits?.[r], `limits.${r}`).toBeDefined();
    }
    expect(cores(requests.cpu)).toBeLessThanOrEqual(cores(limits.cpu));
    expect(bytes(requests.memory)).toBeLessThanOrEqual(bytes(limits.memory));
    // Redis reads 128mb as 128 × 2^20 bytes.
    const maxmemory = /^(\d+)mb$/i.exec(arg('--maxmemory') ?? '');
    expect(maxmemory, '--maxmemory in mb').not.toBeNull();
    expect(Number(maxmemory![1]) * 2 ** 20).toBeLessThan(bytes(limits.memory));
  });

  it('runs non-root with a read-only root filesystem', () => {
    const pod = redisDeployment().spec.template.spec.securityContext as Obj;
    const c = redisContainer().securityContext as Obj;
    expect(c?.runAsNonRoot ?? pod?.runAsNonRoot).toBe(true);
    expect(c?.runAsUser ?? pod?.runAsUser).toBeGreaterThan(0);
    expect(c?.readOnlyRootFilesystem).toBe(true);
    expect(c?.allowPrivilegeEscalation).toBe(false);
  });

  it('the NetworkPolicy lets only the gateway pods reach the Redis port', () => {
    const np = one('NetworkPolicy');
    expect(selects(np.spec.podSelector.matchLabels, redisPodLabels())).toBe(true);
    const ingress = np.spec.ingress as Obj[];
    expect(ingress).toHaveLength(1);
    const from = (ingress[0] as Obj).from as Obj[];
    expect(from).toHaveLength(1);
    expect(selects((from[0] as Obj).podSelector.matchLabels, podLabels())).toBe(true);
    expect(((ingress[0] as Obj).ports as Obj[]).map((p) => resolveRedisPort(p.port))).toEqual([redisPort()]);
  });

  it("the redis_url its comment gives names the Service and its port", () => {
    const text = readFileSync(join(REDIS_DIR, 'redis.yaml'), 'utf8');
    const urls = [...text.matchAll(/redis_url: (\S+)/g)].map((m) => m[1] as string);
    expect(urls.length).toBeGreaterThan(0);
    for (const raw of urls) {
      const url = new URL(raw.replace('<namespace>', 'ns'));
      expect(url.protocol).toBe('redis:');
      expect(url.hostname.split('.')[0]).toBe(one('Service').metadata.name);
      expect(Number(url.port)).toBe((one('Service').spec.ports as Obj[])[0]!.port);
    }
  });
});
