// `kiln up --backend kubernetes`: an unknown backend or no worker image is a usage error before
// anything starts; a namespace that does not exist or a kubeconfig whose user may not list pods
// refuses the start with KILN_KUBERNETES_UNAVAILABLE naming it (the kubeconfig from
// $KUBECONFIG, here the fake API server's).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli } from './cli-harness.ts';
import { FakeKubeApi } from '../helpers/fake-kube-api.ts';

const up = ['up', '--port', '0', '--gateway-port', '0'];

void test('kiln up --backend refuses an unknown backend and a kubernetes one without an image', async (t) => {
  const home = join(await mkdtemp(join(tmpdir(), 'kiln-k8s-')), 'home');
  t.after(() => rm(join(home, '..'), { recursive: true, force: true }));
  const cli = new Cli('http://127.0.0.1:9', home);
  const unknown = await cli.fails([...up, '--backend', 'nomad'], 2);
  assert.match(unknown, /invalid --backend nomad: expected local or kubernetes/);
  const noImage = await cli.fails([...up, '--backend', 'kubernetes'], 2, { KILN_WORKER_IMAGE: '' });
  assert.match(noImage, /--backend kubernetes needs --worker-image IMAGE/);
  assert.equal(existsSync(home), false, 'nothing was started');
});

void test('kiln up --backend kubernetes names a missing namespace and a missing right', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-k8s-'));
  const fake = new FakeKubeApi();
  fake.namespaces.add('kiln');
  await fake.start();
  t.after(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, fake.kubeConfig('kiln').exportConfig());
  const cli = new Cli('http://127.0.0.1:9', join(dir, 'home'));
  const args = [...up, '--backend', 'kubernetes', '--worker-image', 'kiln:test'];
  const env = { KUBECONFIG: kubeconfig };
  const missing = await cli.fails([...args, '--kube-namespace', 'nope'], 1, env);
  assert.match(
    missing,
    /error: the Kubernetes backend cannot start: namespace nope does not exist .*\(KILN_KUBERNETES_UNAVAILABLE\)/,
  );
  fake.forbid('list', 'pods');
  const forbidden = await cli.fails(args, 1, env);
  assert.match(
    forbidden,
    /the Kubernetes backend cannot start: forbidden: the kubeconfig's user may not list pods in namespace kiln \(403\)/,
  );
  assert.match(forbidden, /hint: check the kubeconfig/);
});
