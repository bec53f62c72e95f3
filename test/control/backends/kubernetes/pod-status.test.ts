// Reasons read off pods and Deployments as Kubernetes reports them, and the ready addresses of
// EndpointSlices: pure functions, checked on the objects' shapes from the API reference.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeItem } from '../../../../src/control/backends/kubernetes/kube-api.ts';
import {
  deploymentProblem,
  podProblem,
  readyPodUrls,
} from '../../../../src/control/backends/kubernetes/pod-status.ts';

function pod(status: object, name = 'p-1'): KubeItem {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, status };
}

test('a crash loop names its last exit, an OOM kill its container, a pending pod the scheduler', () => {
  assert.equal(
    podProblem(
      pod({
        phase: 'Running',
        containerStatuses: [
          {
            name: 'worker',
            restartCount: 4,
            state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } },
            lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
          },
        ],
      }),
    ),
    'CrashLoopBackOff: last exit: OOMKilled, exit code 137',
  );
  assert.equal(
    podProblem(
      pod({
        phase: 'Running',
        containerStatuses: [
          {
            name: 'worker',
            restartCount: 1,
            state: { running: {} },
            lastState: { terminated: { reason: 'OOMKilled' } },
          },
        ],
      }),
    ),
    'OOMKilled: container worker ran out of memory (restarted 1 times)',
  );
  assert.equal(
    podProblem(
      pod({
        phase: 'Pending',
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/2 nodes are available: 2 Insufficient nvidia.com/mig-1g.10gb.',
          },
        ],
      }),
    ),
    'Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/mig-1g.10gb.',
  );
  assert.equal(
    podProblem(
      pod({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' }),
    ),
    'pod p-1 failed: Evicted (The node was low on resource: memory.)',
  );
  // Starting normally: nothing to report.
  assert.equal(
    podProblem(
      pod({
        phase: 'Pending',
        containerStatuses: [
          { name: 'worker', state: { waiting: { reason: 'ContainerCreating' } } },
        ],
      }),
    ),
    null,
  );
});

test('a Deployment that cannot create pods names the condition', () => {
  const deployment: KubeItem = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    status: {
      conditions: [
        { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated' },
        {
          type: 'ReplicaFailure',
          status: 'True',
          reason: 'FailedCreate',
          message: 'pods "d-1" is forbidden: exceeded quota: gpu, requested: nvidia.com/gpu=1',
        },
      ],
    },
  };
  assert.equal(
    deploymentProblem(deployment),
    'FailedCreate: pods "d-1" is forbidden: exceeded quota: gpu, requested: nvidia.com/gpu=1',
  );
});

test('only ready, not terminating endpoints of the Service are addresses; IPv6 bracketed', () => {
  const slice: KubeItem = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 's-abc', labels: { 'kubernetes.io/service-name': 's' } },
    ports: [{ name: 'http', port: 9000 }],
    endpoints: [
      {
        addresses: ['10.0.0.1'],
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: 'a' },
      },
      {
        addresses: ['10.0.0.2'],
        conditions: { ready: false },
        targetRef: { kind: 'Pod', name: 'b' },
      },
      {
        addresses: ['10.0.0.3'],
        conditions: { ready: true, terminating: true },
        targetRef: { kind: 'Pod', name: 'c' },
      },
      { addresses: ['fd00::4'], conditions: {}, targetRef: { kind: 'Pod', name: 'd' } },
    ],
  };
  const other = {
    ...slice,
    metadata: { name: 'o', labels: { 'kubernetes.io/service-name': 'o' } },
  };
  assert.deepEqual(
    [...readyPodUrls([slice, other], 's')],
    [
      ['a', 'http://10.0.0.1:9000'],
      ['d', 'http://[fd00::4]:9000'],
    ],
  );
});
