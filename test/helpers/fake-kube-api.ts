// A local stand-in for the Kubernetes API server (node:http on 127.0.0.1), answering the calls
// the Kubernetes backend makes the way the real one does:
// - discovery (/api/v1, /apis/GROUP/VERSION) for the kinds it knows: pods, namespaces,
//   deployments, endpointslices, services, PDBs (policy/v1), HPAs (autoscaling/v2), KEDA
//   ScaledObjects (keda.sh/v1alpha1);
// - PATCH as server-side apply only: Content-Type application/apply-patch+yaml (else 415), a
//   fieldManager (else 400), creates or updates, records managedFields; GET, DELETE, LIST (label
//   selectors `k=v`, `k`), WATCH (?watch=true: JSON lines from a resourceVersion, ERROR 410
//   Expired for one older than what it keeps);
// - resourceVersion: one counter for the whole server, incremented on every write;
// - 403 for a verb/resource the test forbids, 404 for a namespace that does not exist.
// With `pods` set, it plays the Deployment and EndpointSlice controllers too: a Deployment's
// replicas become pods (the behaviour the test gives each: ready at an address, or stuck with
// a waiting reason), a scale down deletes the lowest pod-deletion-cost pods first, and each
// Service gets an EndpointSlice listing its pods' addresses with their readiness.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

export type FakeObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    generation?: number;
    managedFields?: { manager: string; operation: string; apiVersion: string }[];
  };
  [k: string]: unknown;
};

interface ResourceType {
  readonly prefix: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

const types: readonly ResourceType[] = [
  { prefix: '/api/v1', plural: 'pods', kind: 'Pod', namespaced: true },
  { prefix: '/api/v1', plural: 'services', kind: 'Service', namespaced: true },
  { prefix: '/api/v1', plural: 'namespaces', kind: 'Namespace', namespaced: false },
  { prefix: '/apis/apps/v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
  {
    prefix: '/apis/discovery.k8s.io/v1',
    plural: 'endpointslices',
    kind: 'EndpointSlice',
    namespaced: true,
  },
  {
    prefix: '/apis/policy/v1',
    plural: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    namespaced: true,
  },
  {
    prefix: '/apis/autoscaling/v2',
    plural: 'horizontalpodautoscalers',
    kind: 'HorizontalPodAutoscaler',
    namespaced: true,
  },
  {
    prefix: '/apis/keda.sh/v1alpha1',
    plural: 'scaledobjects',
    kind: 'ScaledObject',
    namespaced: true,
  },
];

/** What the fake Deployment controller makes of a new pod of a Deployment. */
export type PodBehaviour =
  | { readonly ready: true; readonly ip: string; readonly port: number }
  | {
      readonly ready: false;
      readonly waiting?: { reason: string; message: string };
      readonly unschedulable?: string;
    }
  | { readonly ready: false; readonly oomKilled: true; readonly ip: string; readonly port: number };

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly contentType: string | undefined;
  readonly status: number;
}

interface WatchEntry {
  readonly rv: number;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly key: string;
  readonly object: FakeObject;
}

interface Watcher {
  readonly prefixKey: string;
  readonly selector: string | null;
  readonly response: ServerResponse;
}

export class FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  readonly namespaces = new Set<string>(['default']);
  /** Objects by "prefix/ns/plural/name". */
  private readonly objects = new Map<string, FakeObject>();
  private history: WatchEntry[] = [];
  private watchers = new Set<Watcher>();
  private readonly forbidden = new Set<string>();
  private rv = 1000;
  private uid = 0;
  private podCount = 0;
  private server: Server | null = null;
  url = '';
  /** The fake Deployment controller: a new pod of the Deployment behaves as this returns. */
  pods: ((deployment: string, index: number) => PodBehaviour) | null = null;

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      void this.handle(request, response);
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (typeof address !== 'object' || address === null) throw new Error('no address');
    this.url = `http://127.0.0.1:${address.port}`;
  }

  async close(): Promise<void> {
    this.dropWatches();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** A kubeconfig for this server (token auth, the given namespace in its context). */
  kubeConfig(namespace = 'default'): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'kiln', token: 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'kiln', namespace }],
      currentContext: 'fake',
    });
    return config;
  }

  /** The verb (get, list, watch, patch, delete) on the resource (plural) answers 403. */
  forbid(verb: string, plural: string): void {
    this.forbidden.add(`${verb} ${plural}`);
  }

  allow(verb: string, plural: string): void {
    this.forbidden.delete(`${verb} ${plural}`);
  }

  /** Cuts every open watch stream (a dropped connection). */
  dropWatches(): void {
    for (const watcher of this.watchers) watcher.response.destroy();
    this.watchers.clear();
  }

  /** Ends every open watch stream cleanly, as the API server does at a watch's timeout. */
  endWatches(): void {
    for (const watcher of this.watchers) watcher.response.end();
    this.watchers.clear();
  }

  /** Forgets the change history: a watch from an earlier resourceVersion gets 410 Gone. */
  compact(): void {
    this.history = [];
  }

  get resourceVersion(): number {
    return this.rv;
  }

  get(plural: string, namespace: string, name: string): FakeObject | undefined {
    const type = types.find((t) => t.plural === plural);
    if (type === undefined) return undefined;
    return this.objects.get(keyOf(type, namespace, name));
  }

  list(plural: string, namespace: string): FakeObject[] {
    const type = types.find((t) => t.plural === plural);
    if (type === undefined) return [];
    const prefix = `${type.prefix}/${namespace}/${plural}/`;
    return [...this.objects.entries()].filter(([k]) => k.startsWith(prefix)).map(([, o]) => o);
  }

  /** Writes an object as a controller would (status included), bumping its version. */
  put(plural: string, namespace: string, object: FakeObject): FakeObject {
    const type = types.find((t) => t.plural === plural);
    if (type === undefined) throw new Error(`unknown resource ${plural}`);
    return this.write(type, namespace, object);
  }

  /** Deletes an object as a controller or a user would. */
  remove(plural: string, namespace: string, name: string): void {
    const type = types.find((t) => t.plural === plural);
    if (type !== undefined) this.erase(type, namespace, name);
  }

  // ---------------------------------------------------------------- the HTTP side

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const method = request.method ?? 'GET';
    const body = await readBody(request);
    const record = (status: number): void => {
      this.requests.push({
        method,
        path: url.pathname,
        query: url.searchParams,
        contentType: request.headers['content-type'],
        status,
      });
    };
    const send = (status: number, payload: unknown): void => {
      record(status);
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(payload));
    };
    const discovery = types.filter((t) => t.prefix === url.pathname);
    if (method === 'GET' && discovery.length > 0) {
      return send(200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: url.pathname.replace(/^\/apis?\//, ''),
        resources: discovery.map((t) => ({
          name: t.plural,
          singularName: t.kind.toLowerCase(),
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        })),
      });
    }
    const route = parsePath(url.pathname);
    if (route === null)
      return send(404, status(404, 'NotFound', `the server could not find the requested resource`));
    const { type, namespace, name } = route;
    const watch = url.searchParams.get('watch');
    const verb =
      method === 'GET'
        ? name === null
          ? watch === 'true' || watch === '1'
            ? 'watch'
            : 'list'
          : 'get'
        : method.toLowerCase();
    const group = type.prefix.startsWith('/apis/') ? (type.prefix.split('/')[2] ?? '') : '';
    if (this.forbidden.has(`${verb} ${type.plural}`)) {
      const what =
        name === null ? type.plural : `${type.plural}${group === '' ? '' : `.${group}`} "${name}"`;
      return send(
        403,
        status(
          403,
          'Forbidden',
          `${what} is forbidden: User "kiln" cannot ${verb} resource "${type.plural}" in API group "${group}" in the namespace "${namespace ?? ''}"`,
        ),
      );
    }
    if (type.plural === 'namespaces') {
      if (method === 'GET' && name !== null) {
        if (!this.namespaces.has(name))
          return send(404, status(404, 'NotFound', `namespaces "${name}" not found`));
        return send(200, {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name },
          status: { phase: 'Active' },
        });
      }
      return send(405, status(405, 'MethodNotAllowed', 'not supported by this fake'));
    }
    if (namespace === null)
      return send(404, status(404, 'NotFound', 'cluster-scoped listing is not supported'));
    const missingNamespace = (): void =>
      send(404, status(404, 'NotFound', `namespaces "${namespace}" not found`));
    switch (verb) {
      case 'patch': {
        if (name === null) return send(405, status(405, 'MethodNotAllowed', 'PATCH needs a name'));
        const contentType = request.headers['content-type'] ?? '';
        if (!contentType.startsWith('application/apply-patch+yaml'))
          return send(
            415,
            status(
              415,
              'UnsupportedMediaType',
              `the body of the request was in an unknown format - accepted media types include: application/apply-patch+yaml`,
            ),
          );
        const manager = url.searchParams.get('fieldManager');
        if (manager === null || manager === '')
          return send(
            400,
            status(
              400,
              'BadRequest',
              'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            ),
          );
        if (!this.namespaces.has(namespace)) return missingNamespace();
        let applied: FakeObject;
        try {
          applied = JSON.parse(body) as FakeObject; // JSON is YAML: what the client sends
        } catch {
          return send(400, status(400, 'BadRequest', 'error decoding YAML'));
        }
        if (applied.kind !== type.kind || applied.metadata?.name !== name)
          return send(
            400,
            status(
              400,
              'BadRequest',
              `the kind or name in the body does not match the URL (${applied.kind}/${applied.metadata?.name})`,
            ),
          );
        const existing = this.objects.get(keyOf(type, namespace, name));
        const merged = existing === undefined ? applied : mergeApplied(existing, applied);
        const managedFields = [
          ...(existing?.metadata.managedFields ?? []).filter((f) => f.manager !== manager),
          { manager, operation: 'Apply', apiVersion: applied.apiVersion },
        ];
        merged.metadata = { ...merged.metadata, managedFields };
        const written = this.write(type, namespace, merged);
        return send(existing === undefined ? 201 : 200, written);
      }
      case 'get': {
        const found = name === null ? undefined : this.objects.get(keyOf(type, namespace, name));
        if (found === undefined)
          return send(404, status(404, 'NotFound', `${type.plural} "${name ?? ''}" not found`));
        return send(200, found);
      }
      case 'delete': {
        if (name === null || !this.objects.has(keyOf(type, namespace, name)))
          return send(404, status(404, 'NotFound', `${type.plural} "${name ?? ''}" not found`));
        this.erase(type, namespace, name);
        return send(200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
      }
      case 'list': {
        const selector = url.searchParams.get('labelSelector');
        const items = this.list(type.plural, namespace).filter((o) => selects(selector, o));
        return send(200, {
          apiVersion: type.prefix.replace(/^\/apis?\//, ''),
          kind: `${type.kind}List`,
          metadata: { resourceVersion: String(this.rv) },
          items,
        });
      }
      case 'watch': {
        const from = Number(url.searchParams.get('resourceVersion') ?? this.rv);
        const prefixKey = `${type.prefix}/${namespace}/${type.plural}/`;
        const selector = url.searchParams.get('labelSelector');
        record(200);
        response.writeHead(200, { 'content-type': 'application/json' });
        const oldest = this.history[0]?.rv ?? this.rv + 1;
        if (from < oldest - 1) {
          response.end(
            `${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${this.rv})`) })}\n`,
          );
          return;
        }
        for (const entry of this.history) {
          if (entry.rv > from && entry.key.startsWith(prefixKey) && selects(selector, entry.object))
            response.write(`${JSON.stringify({ type: entry.type, object: entry.object })}\n`);
        }
        const watcher: Watcher = { prefixKey, selector, response };
        this.watchers.add(watcher);
        response.on('close', () => this.watchers.delete(watcher));
        return;
      }
      default:
        return send(
          405,
          status(405, 'MethodNotAllowed', `${method} is not supported by this fake`),
        );
    }
  }

  // ---------------------------------------------------------------- writes and the controllers

  private write(type: ResourceType, namespace: string, object: FakeObject): FakeObject {
    const key = keyOf(type, namespace, object.metadata.name);
    const existing = this.objects.get(key);
    this.rv += 1;
    const stored: FakeObject = {
      ...object,
      metadata: {
        ...object.metadata,
        namespace,
        uid: existing?.metadata.uid ?? `uid-${++this.uid}`,
        creationTimestamp:
          existing?.metadata.creationTimestamp ?? new Date(this.rv * 1000).toISOString(),
        resourceVersion: String(this.rv),
        generation: (existing?.metadata.generation ?? 0) + 1,
      },
    };
    this.objects.set(key, stored);
    this.emit({
      rv: this.rv,
      type: existing === undefined ? 'ADDED' : 'MODIFIED',
      key,
      object: stored,
    });
    if (type.plural === 'deployments') this.reconcileDeployment(namespace, stored);
    if (type.plural === 'services' || type.plural === 'pods') this.reconcileSlices(namespace);
    return stored;
  }

  private erase(type: ResourceType, namespace: string, name: string): void {
    const key = keyOf(type, namespace, name);
    const existing = this.objects.get(key);
    if (existing === undefined) return;
    this.objects.delete(key);
    this.rv += 1;
    const object = {
      ...existing,
      metadata: { ...existing.metadata, resourceVersion: String(this.rv) },
    };
    this.emit({ rv: this.rv, type: 'DELETED', key, object });
    if (type.plural === 'deployments') {
      for (const pod of this.podsOf(namespace, existing))
        this.remove('pods', namespace, pod.metadata.name);
    }
    if (type.plural === 'services' || type.plural === 'pods') this.reconcileSlices(namespace);
  }

  private emit(entry: WatchEntry): void {
    this.history.push(entry);
    const line = `${JSON.stringify({ type: entry.type, object: entry.object })}\n`;
    for (const watcher of this.watchers) {
      if (entry.key.startsWith(watcher.prefixKey) && selects(watcher.selector, entry.object))
        watcher.response.write(line);
    }
  }

  private podsOf(namespace: string, deployment: FakeObject): FakeObject[] {
    const selector = (
      deployment.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined
    )?.selector?.matchLabels;
    if (selector === undefined) return [];
    return this.list('pods', namespace).filter((p) =>
      Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v),
    );
  }

  /** The Deployment controller: as many pods as replicas; the cheapest go first. */
  private reconcileDeployment(namespace: string, deployment: FakeObject): void {
    if (this.pods === null) return;
    const spec = deployment.spec as {
      replicas?: number;
      template?: { metadata?: { labels?: Record<string, string> } };
    };
    const want = spec.replicas ?? 1;
    const pods = this.podsOf(namespace, deployment);
    const name = deployment.metadata.name;
    for (let i = pods.length; i < want; i++) {
      const index = ++this.podCount;
      const behaviour = this.pods(name, index);
      this.put(
        'pods',
        namespace,
        podOf(`${name}-${index}`, spec.template?.metadata?.labels ?? {}, behaviour),
      );
    }
    if (pods.length > want) {
      const cost = (p: FakeObject): number =>
        Number(p.metadata.annotations?.['controller.kubernetes.io/pod-deletion-cost'] ?? 0);
      const notReady = (p: FakeObject): number => (podReady(p) ? 1 : 0);
      const victims = [...pods]
        .sort((a, b) => notReady(a) - notReady(b) || cost(a) - cost(b))
        .slice(0, pods.length - want);
      for (const pod of victims) this.remove('pods', namespace, pod.metadata.name);
    }
  }

  /** The EndpointSlice controller: one slice per Service, its selected pods' addresses. */
  private reconcileSlices(namespace: string): void {
    if (this.pods === null) return;
    for (const service of this.list('services', namespace)) {
      const spec = service.spec as {
        selector?: Record<string, string>;
        ports?: { port?: number; targetPort?: number | string; name?: string }[];
      };
      const selector = spec.selector ?? {};
      const pods = this.list('pods', namespace).filter((p) =>
        Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v),
      );
      const withIp = pods.filter(
        (p) => (p.status as { podIP?: string } | undefined)?.podIP !== undefined,
      );
      const port = withIp[0]?.metadata.annotations?.['fake.kiln.dev/port'] ?? '0';
      const endpoints = withIp.map((p) => ({
        addresses: [(p.status as { podIP: string }).podIP],
        conditions: { ready: podReady(p), serving: podReady(p), terminating: false },
        targetRef: { kind: 'Pod', name: p.metadata.name, namespace },
      }));
      const sliceName = `${service.metadata.name}-fake0`;
      const existing = this.get('endpointslices', namespace, sliceName);
      const slice: FakeObject = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: sliceName,
          labels: {
            ...service.metadata.labels,
            'kubernetes.io/service-name': service.metadata.name,
            'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
          },
        },
        addressType: 'IPv4',
        endpoints,
        ports: [{ name: spec.ports?.[0]?.name ?? 'http', port: Number(port), protocol: 'TCP' }],
      };
      if (
        existing !== undefined &&
        JSON.stringify(existing.endpoints) === JSON.stringify(endpoints) &&
        JSON.stringify(existing.ports) === JSON.stringify(slice.ports)
      )
        continue;
      const type = types.find((t) => t.plural === 'endpointslices');
      if (type !== undefined) this.write(type, namespace, slice);
    }
  }
}

function podReady(pod: FakeObject): boolean {
  const conditions = (pod.status as { conditions?: { type: string; status: string }[] } | undefined)
    ?.conditions;
  return conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** A pod as the kubelet reports it for the behaviour. */
export function podOf(
  name: string,
  labels: Record<string, string>,
  behaviour: PodBehaviour,
): FakeObject {
  const container = 'worker';
  let status: Record<string, unknown>;
  let annotations: Record<string, string> = {};
  if (behaviour.ready) {
    annotations = { 'fake.kiln.dev/port': String(behaviour.port) };
    status = {
      phase: 'Running',
      podIP: behaviour.ip,
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      containerStatuses: [
        { name: container, ready: true, restartCount: 0, state: { running: {} } },
      ],
    };
  } else if ('oomKilled' in behaviour) {
    annotations = { 'fake.kiln.dev/port': String(behaviour.port) };
    status = {
      phase: 'Running',
      podIP: behaviour.ip,
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
      containerStatuses: [
        {
          name: container,
          ready: false,
          restartCount: 1,
          state: { waiting: { reason: 'ContainerCreating' } },
          lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
        },
      ],
    };
  } else if (behaviour.unschedulable !== undefined) {
    status = {
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: behaviour.unschedulable,
        },
      ],
    };
  } else {
    status = {
      phase: 'Pending',
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
      containerStatuses:
        behaviour.waiting === undefined
          ? []
          : [
              {
                name: container,
                ready: false,
                restartCount: 0,
                state: { waiting: behaviour.waiting },
              },
            ],
    };
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels, annotations },
    spec: { containers: [{ name: container }] },
    status,
  };
}

/** Server-side apply, as far as the backend's objects go: the applied fields replace ours. */
function mergeApplied(existing: FakeObject, applied: FakeObject): FakeObject {
  const merged: FakeObject = { ...existing, ...applied };
  merged.metadata = {
    ...existing.metadata,
    ...applied.metadata,
    labels: { ...existing.metadata.labels, ...applied.metadata.labels },
    annotations: { ...existing.metadata.annotations, ...applied.metadata.annotations },
  };
  if (existing.status !== undefined) merged.status = existing.status;
  // A partial apply (metadata only: a pod's deletion cost) keeps the spec.
  if (applied.spec === undefined && existing.spec !== undefined) merged.spec = existing.spec;
  return merged;
}

function keyOf(type: ResourceType, namespace: string, name: string): string {
  return `${type.prefix}/${namespace}/${type.plural}/${name}`;
}

function parsePath(
  path: string,
): { type: ResourceType; namespace: string | null; name: string | null } | null {
  for (const type of types) {
    if (!path.startsWith(`${type.prefix}/`)) continue;
    const rest = path
      .slice(type.prefix.length + 1)
      .split('/')
      .map(decodeURIComponent);
    if (rest[0] === 'namespaces' && type.plural === 'namespaces' && rest.length <= 2)
      return { type, namespace: null, name: rest[1] ?? null };
    if (rest[0] === 'namespaces' && rest[2] === type.plural && rest.length <= 4)
      return { type, namespace: rest[1] ?? null, name: rest[3] ?? null };
  }
  return null;
}

/** `a=b,c` selectors: equality and existence, what the backend sends. */
function selects(selector: string | null, object: FakeObject): boolean {
  if (selector === null || selector === '') return true;
  return selector.split(',').every((term) => {
    const [key = '', value] = term.split('=');
    const has = object.metadata.labels?.[key.trim()];
    return value === undefined ? has !== undefined : has === value.trim();
  });
}

function status(code: number, reason: string, message: string): object {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString()));
    request.on('error', reject);
  });
}
