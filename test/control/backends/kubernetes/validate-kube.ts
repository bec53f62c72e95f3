// Validates rendered objects against the Kubernetes OpenAPI schemas (kubernetes-models) and
// KEDA's CRD schema (@kubernetes-models/keda): a field misspelled, a wrong type or a missing
// required field throws. Every kind Kiln renders must be listed here (an unknown one throws).

import { Namespace, ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';

const models: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
};

/** Throws (naming the object) when `object` is not valid for its apiVersion and kind. */
export function validateKubeObject(object: { apiVersion?: unknown; kind?: unknown }): void {
  const key = `${String(object.apiVersion)}/${String(object.kind)}`;
  const Model = models[key];
  if (Model === undefined) throw new Error(`no schema for ${key}`);
  const name = (object as { metadata?: { name?: string } }).metadata?.name ?? '?';
  try {
    new Model(structuredClone(object) as never).validate();
  } catch (error) {
    throw new Error(`${key} ${name} is invalid: ${(error as Error).message}`, { cause: error });
  }
}
