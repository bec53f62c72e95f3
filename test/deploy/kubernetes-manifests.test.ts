// deploy/kubernetes/: the example manifests for running Kiln itself are the renderer's output
// (render-platform.ts; KILN_UPDATE_GOLDEN=1 rewrites them), and every document of every file
// there parses and is valid for the Kubernetes schemas. The Dockerfile keeps its invariants
// (no docker here to build it): Node 20 slim, multi-stage, production dependencies only,
// compiled JavaScript, a non-root user, and the entry points the manifests run exist.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { kubeYaml } from '../../src/control/backends/kubernetes/kube-yaml.ts';
import { renderInstall } from '../../src/control/backends/kubernetes/render-platform.ts';
import { renderRevision } from '../../src/control/backends/kubernetes/render.ts';
import { validateKubeObject } from '../control/backends/kubernetes/validate-kube.ts';
import { inputOf, treeSample } from '../control/backends/kubernetes/render-samples.ts';

const root = new URL('../../', import.meta.url).pathname;
const deployDir = `${root}deploy/kubernetes/`;
const update = process.env.KILN_UPDATE_GOLDEN === '1';

const install = renderInstall({
  namespace: 'kiln',
  image: 'registry.example.com/kiln:0.1.0',
  controlUrl: 'http://kiln-control.kiln.svc:8080',
});

test('deploy/kubernetes holds the rendered install, file for file', () => {
  for (const [file, objects] of Object.entries(install)) {
    const path = deployDir + file;
    const yaml = kubeYaml(objects);
    if (update) writeFileSync(path, yaml);
    assert.ok(existsSync(path), `${path} is missing (KILN_UPDATE_GOLDEN=1 writes it)`);
    assert.equal(readFileSync(path, 'utf8'), yaml, `${path} differs from the renderer`);
    // Nothing lost on the way to YAML (a field the client's models do not know).
    assert.deepEqual(
      loadAllYaml(yaml).map((o) => JSON.parse(JSON.stringify(o)) as unknown),
      JSON.parse(JSON.stringify(objects)),
    );
  }
});

test('every manifest in deploy/kubernetes parses and validates', () => {
  const files = readdirSync(deployDir).filter((f) => /\.ya?ml$/.test(f));
  assert.ok(files.length >= 5, files.join(', '));
  const kinds: string[] = [];
  for (const file of files) {
    const objects = loadAllYaml(readFileSync(deployDir + file, 'utf8'));
    assert.ok(objects.length > 0, `${file} holds no object`);
    for (const object of objects) {
      const plain = JSON.parse(JSON.stringify(object)) as { kind: string; apiVersion: string };
      validateKubeObject(plain);
      kinds.push(plain.kind);
    }
  }
  for (const kind of [
    'Namespace',
    'ServiceAccount',
    'Role',
    'RoleBinding',
    'Deployment',
    'Service',
  ])
    assert.ok(kinds.includes(kind), `no ${kind} in deploy/kubernetes`);
});

test("the control plane's Role covers every kind the backend applies, and the reads it watches", () => {
  const role = install['10-rbac.yaml']!.find((o) => o.kind === 'Role') as unknown as {
    rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  };
  const allows = (group: string, resource: string, verb: string): boolean =>
    role.rules.some(
      (r) =>
        r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb),
    );
  const resources: Record<string, [string, string]> = {
    Deployment: ['apps', 'deployments'],
    Service: ['', 'services'],
    PodDisruptionBudget: ['policy', 'poddisruptionbudgets'],
    HorizontalPodAutoscaler: ['autoscaling', 'horizontalpodautoscalers'],
    ScaledObject: ['keda.sh', 'scaledobjects'],
  };
  for (const [kind, [group, resource]] of Object.entries(resources))
    for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'delete'])
      assert.ok(allows(group, resource, verb), `${kind}: ${verb} ${group}/${resource}`);
  for (const [group, resource] of [
    ['', 'pods'],
    ['discovery.k8s.io', 'endpointslices'],
  ] as const)
    for (const verb of ['get', 'list', 'watch'])
      assert.ok(allows(group, resource, verb), `${verb} ${group}/${resource}`);
  // The kinds a revision renders are among them.
  for (const o of renderRevision(inputOf(treeSample))) assert.ok(o.kind in resources, o.kind);
});

test('the Dockerfile: Node 20 slim stages, production dependencies, dist/, non-root', () => {
  const text = readFileSync(`${root}Dockerfile`, 'utf8');
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const froms = lines.filter((l) => /^FROM\s/i.test(l));
  assert.ok(froms.length >= 2, 'multi-stage');
  for (const from of froms) assert.match(from, /^FROM node:20(\.[\d.]+)?-[a-z]+-slim\b/, from);
  const runtimeStart = lines.lastIndexOf(froms.at(-1)!);
  const build = lines.slice(0, runtimeStart);
  const runtime = lines.slice(runtimeStart);
  assert.ok(
    build.some((l) => /^RUN npm ci(\s|$)/.test(l)),
    'build stage: npm ci',
  );
  assert.ok(
    build.some((l) => /^RUN npm run build\b/.test(l)),
    'build stage: npm run build',
  );
  assert.ok(
    build.some((l) => /npm ci --omit=dev/.test(l)),
    'production dependencies only',
  );
  // The runtime stage compiles nothing and installs no dev dependencies.
  assert.ok(
    !runtime.some((l) => /npm (ci|install)|apt-get|npm run build/.test(l)),
    runtime.join('\n'),
  );
  assert.ok(
    runtime.some((l) => /^COPY --from=build \/app\/dist \.\/dist$/.test(l)),
    'compiled JavaScript',
  );
  assert.ok(runtime.some((l) => /^COPY --from=build \/app\/node_modules /.test(l)));
  assert.ok(!runtime.some((l) => /^COPY\s+(\S+\s+)?src\b/.test(l)), 'no sources in the runtime');
  const users = runtime.filter((l) => /^USER\s/.test(l));
  assert.equal(users.length, 1);
  const user = users[0]!.split(/\s+/)[1]!.split(':')[0]!;
  assert.ok(user !== 'root' && user !== '0', `USER ${user}`);
  // Numeric, so the pods' runAsNonRoot can be checked, and the uid they run as.
  assert.match(user, /^\d+$/);
  assert.equal(Number(user), 1000);
  // The entry points the image and the manifests run are compiled from these sources.
  for (const entry of ['cli/main', 'worker/main', 'gateway/main'])
    assert.ok(existsSync(`${root}src/${entry}.ts`), entry);
  assert.ok(existsSync(`${root}bin/kiln.js`) && existsSync(`${root}scripts/dist-state.js`));
  const ignore = readFileSync(`${root}.dockerignore`, 'utf8').split('\n');
  for (const path of ['node_modules', 'dist', '.kiln', '.git'])
    assert.ok(ignore.includes(path), path);
});

test('the control plane reads its store URL from a Secret and the artifact settings; the gateway its token', () => {
  type Container = {
    command: string[];
    args: string[];
    env: { name: string; valueFrom?: unknown; value?: string }[];
    envFrom?: unknown[];
  };
  const containerOf = (file: string): Container =>
    (
      install[file]!.find((o) => o.kind === 'Deployment') as unknown as {
        spec: { template: { spec: { containers: Container[]; serviceAccountName?: string } } };
      }
    ).spec.template.spec.containers[0]!;
  const control = containerOf('30-control-plane.yaml');
  assert.deepEqual(control.env.find((e) => e.name === 'KILN_STORE_URL')?.valueFrom, {
    secretKeyRef: { name: 'kiln-store', key: 'url' },
  });
  assert.deepEqual(control.envFrom, [
    { configMapRef: { name: 'kiln-artifacts' } },
    { secretRef: { name: 'kiln-artifacts', optional: true } },
  ]);
  assert.deepEqual(control.args.slice(0, 1), ['up']);
  assert.ok(control.args.join(' ').includes('--backend kubernetes'));
  const gateway = containerOf('40-gateway.yaml');
  assert.deepEqual(gateway.command, ['node', 'dist/gateway/main.js']);
  assert.ok(gateway.args.join(' ').includes('--control-url http://kiln-control.kiln.svc:8080'));
  assert.deepEqual(gateway.env.find((e) => e.name === 'KILN_CONTROL_TOKEN')?.valueFrom, {
    secretKeyRef: { name: 'kiln-gateway-token', key: 'token' },
  });
});
