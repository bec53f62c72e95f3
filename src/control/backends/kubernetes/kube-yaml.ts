// Kubernetes objects as multi-document YAML (`kiln k8s render`, deploy/kubernetes/), through
// @kubernetes/client-node's `dumpYaml` (js-yaml underneath; no YAML package of our own). It
// serializes through the client's typed models, so the keys of built-in kinds come out in
// the models' order and custom resources (KEDA's ScaledObject) as given; a field a model
// does not know would be dropped, which the renderer's tests check never happens.

import { dumpYaml } from '@kubernetes/client-node';
import type { KubeObject } from './kube-object.ts';

export function kubeYaml(objects: readonly KubeObject[]): string {
  // noRefs: an object used twice (shared labels) is written out, never as a YAML anchor;
  // lineWidth -1: long values (the worker spec's JSON) stay on one line.
  return objects.map((o) => `---\n${dumpYaml(o, { noRefs: true, lineWidth: -1 })}`).join('');
}
