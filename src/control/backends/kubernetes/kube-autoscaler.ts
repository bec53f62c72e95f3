// Who scales an endpoint's revision on Kubernetes, from its autoscale policy
// (src/autoscale/autoscale-policy.ts): a HorizontalPodAutoscaler (autoscaling/v2) where HPA can
// express the signal, a KEDA ScaledObject where it cannot.
//
//   signal        minReplicas >= 1                         minReplicas 0 (scale to zero)
//   cpu           HPA, Resource cpu, AverageValue          KEDA cpu + gateway wake trigger
//   concurrency   HPA, Pods kiln_worker_inflight_requests  KEDA prometheus (gateway in flight)
//   qps           HPA, Pods kiln_worker_requests_per_second  KEDA prometheus (gateway rate)
//   queue-depth   KEDA prometheus kiln_worker_queue_depth  + gateway wake trigger
//   accelerator   KEDA prometheus DCGM_FI_DEV_GPU_UTIL     + gateway wake trigger
//   custom        KEDA prometheus <customMetric>           + gateway wake trigger
//   slo           as concurrency, target 1 per replica (its target: 1)
//
// HPA cannot scale to zero (without an alpha gate) and sees only what a metrics adapter serves
// per pod: CPU from metrics-server; the two Pods metrics from prometheus-adapter, whose default
// rules serve a worker's gauge under its name and a `_total` counter as `_per_second`. Queue
// depth, GPU utilization and custom metrics are Prometheus queries: KEDA's prometheus scaler.
// At zero replicas no worker reports anything, so a ScaledObject on a worker signal also
// watches the gateways' demand for the endpoint (requests in flight and held by the activator)
// with a threshold it never reaches: it only wakes the revision (activationThreshold 0).
//
// The policy's pacing maps onto HPA `behavior` (also KEDA's, through
// advanced.horizontalPodAutoscalerConfig): scale-down stabilization = scaleDownDelayMs, at most
// ÷ maxScaleDownRate and × maxScaleUpRate per 15 s period. Kiln's panic mode and predictive
// scaling have no Kubernetes counterpart: on Kubernetes the cluster's autoscaler decides. Nor
// has the `slo` signal's queueing model (slo-sizing.ts): there it scales to one request in
// flight per replica, which keeps requests from queueing at the cost of more replicas.

import type { AutoscalePolicy } from '../../../autoscale/autoscale-policy.ts';
import type { KubeObject } from './kube-object.ts';
import { cpuQuantity } from './kube-resources.ts';

export interface KubeAutoscalerInput {
  readonly name: string;
  readonly namespace: string;
  readonly endpoint: string;
  readonly labels: Record<string, string>;
  readonly policy: AutoscalePolicy;
  /** CPU cores one replica requests (the cpu signal's target is a share of it). */
  readonly cpuCores: number;
  /** KEDA's Prometheus server. */
  readonly prometheusUrl: string;
}

/** HPA's and KEDA's sync period: the rate limits below are per this many seconds. */
const periodSeconds = 15;
/** A threshold no endpoint's demand reaches: the wake trigger never drives the count. */
const wakeOnlyThreshold = '1000000000';

function behavior(policy: AutoscalePolicy): Record<string, unknown> {
  return {
    scaleUp: {
      stabilizationWindowSeconds: 0,
      policies: [
        {
          type: 'Percent',
          value: Math.max(1, Math.round((policy.maxScaleUpRate - 1) * 100)),
          periodSeconds,
        },
      ],
    },
    scaleDown: {
      stabilizationWindowSeconds: Math.ceil(policy.scaleDownDelayMs / 1000),
      policies: [
        {
          type: 'Percent',
          value: Math.max(1, Math.min(100, Math.round((1 - 1 / policy.maxScaleDownRate) * 100))),
          periodSeconds,
        },
      ],
    },
  };
}

/** A number as KEDA's string threshold (no exponent, no trailing zeros). */
function thresholdText(value: number): string {
  return String(Number(value.toFixed(6)));
}

/** A Prometheus label value in double quotes. */
function quoted(value: string): string {
  return JSON.stringify(value);
}

function prometheusTrigger(
  input: KubeAutoscalerInput,
  name: string,
  query: string,
  threshold: string,
  activationThreshold?: string,
): Record<string, unknown> {
  return {
    type: 'prometheus',
    name,
    metricType: 'AverageValue',
    metadata: {
      serverAddress: input.prometheusUrl,
      query,
      threshold,
      ...(activationThreshold === undefined ? {} : { activationThreshold }),
    },
  };
}

/** The ScaledObject's triggers: the signal's, and a wake trigger for worker signals at zero. */
function kedaTriggers(input: KubeAutoscalerInput): Record<string, unknown>[] {
  const { policy, namespace, name, endpoint } = input;
  const pods = `namespace=${quoted(namespace)},pod=~${quoted(`${name}-.*`)}`;
  const target = thresholdText(policy.target);
  // Gateways of this install only (they run in its namespace); `or vector(0)`: a series not
  // reported yet (no request since a gateway started) counts as 0 rather than no answer.
  const gateway = `namespace=${quoted(namespace)},endpoint=${quoted(endpoint)}`;
  const held = `(sum(kiln_gateway_activator_held{${gateway}}) or vector(0))`;
  const demand = `(sum(kiln_gateway_inflight_requests{${gateway}}) or vector(0)) + ${held}`;
  const wake = prometheusTrigger(input, 'wake', demand, wakeOnlyThreshold, '0');
  const atZero = policy.minReplicas === 0;
  switch (policy.signal) {
    case 'cpu':
      return [
        {
          type: 'cpu',
          name: 'cpu',
          metricType: 'AverageValue',
          metadata: { value: cpuQuantity(policy.target * input.cpuCores) },
        },
        ...(atZero ? [wake] : []),
      ];
    case 'concurrency':
    case 'slo': // target 1: see the header
      return [prometheusTrigger(input, 'concurrency', demand, target, '0')];
    case 'qps':
      return [
        prometheusTrigger(
          input,
          'qps',
          `(sum(rate(kiln_gateway_requests_total{${gateway}}[1m])) or vector(0)) + ${held}`,
          target,
          '0',
        ),
      ];
    case 'queue-depth':
      return [
        prometheusTrigger(input, 'queue-depth', `sum(kiln_worker_queue_depth{${pods}})`, target),
        ...(atZero ? [wake] : []),
      ];
    case 'accelerator':
      // DCGM's exporter reports each GPU's utilization in percent, labelled with the pod.
      return [
        prometheusTrigger(input, 'accelerator', `sum(DCGM_FI_DEV_GPU_UTIL{${pods}}) / 100`, target),
        ...(atZero ? [wake] : []),
      ];
    case 'custom': {
      // Prometheus metric names hold no '.' or '-' (a Kiln custom metric's name may).
      const metric = (policy.customMetric ?? 'custom').replace(/[^A-Za-z0-9_:]/g, '_');
      return [
        prometheusTrigger(input, 'custom', `sum(${metric}{${pods}})`, target),
        ...(atZero ? [wake] : []),
      ];
    }
  }
}

function hpaMetric(input: KubeAutoscalerInput): Record<string, unknown> | null {
  const { policy } = input;
  const pods = (metric: string): Record<string, unknown> => ({
    type: 'Pods',
    pods: {
      metric: { name: metric },
      target: { type: 'AverageValue', averageValue: thresholdText(policy.target) },
    },
  });
  switch (policy.signal) {
    case 'cpu':
      return {
        type: 'Resource',
        resource: {
          name: 'cpu',
          target: {
            type: 'AverageValue',
            averageValue: cpuQuantity(policy.target * input.cpuCores),
          },
        },
      };
    case 'concurrency':
    case 'slo':
      return pods('kiln_worker_inflight_requests');
    case 'qps':
      return pods('kiln_worker_requests_per_second');
    case 'queue-depth':
    case 'accelerator':
    case 'custom':
      return null;
  }
}

/** The HPA or ScaledObject that scales the revision's Deployment `input.name`. */
export function renderAutoscaler(input: KubeAutoscalerInput): KubeObject {
  const { policy } = input;
  const metadata = { name: input.name, namespace: input.namespace, labels: input.labels };
  const scaleTargetRef = { apiVersion: 'apps/v1', kind: 'Deployment', name: input.name };
  const metric = policy.minReplicas === 0 ? null : hpaMetric(input);
  if (metric !== null) {
    return {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata,
      spec: {
        scaleTargetRef,
        minReplicas: policy.minReplicas,
        maxReplicas: policy.maxReplicas,
        metrics: [metric],
        behavior: behavior(policy),
      },
    };
  }
  return {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata,
    spec: {
      scaleTargetRef,
      pollingInterval: periodSeconds,
      // How long idle before zero (scale-to-zero's idleMs); only used when minReplicas is 0.
      cooldownPeriod: Math.ceil((policy.scaleToZero?.idleMs ?? 300_000) / 1000),
      minReplicaCount: policy.minReplicas,
      maxReplicaCount: policy.maxReplicas,
      advanced: { horizontalPodAutoscalerConfig: { behavior: behavior(policy) } },
      triggers: kedaTriggers(input),
    },
  };
}
