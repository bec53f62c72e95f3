// What a worker is told of where it runs: KILN_NODE (the inventory node), and
// CUDA_VISIBLE_DEVICES (the device indexes it holds, whole or shared), so a runtime on a GPU
// node sees only its own devices. A MIG instance is named as KILN_MIG_INSTANCES
// (`<device>:<profile>:<instance>`): on real hardware the Kubernetes backend (issue 17) maps it
// to the instance's MIG UUID, which only the device plugin knows.

import type { ReplicaPlacement } from '../../placement/placement.ts';

export function placementEnv(placement: ReplicaPlacement | undefined): Record<string, string> {
  if (placement === undefined) return {};
  const env: Record<string, string> = { KILN_NODE: placement.node };
  if (placement.devices.length > 0) {
    env.CUDA_VISIBLE_DEVICES = placement.devices.map((d) => d.index).join(',');
    const mig = placement.devices.flatMap((d) =>
      d.mig === undefined ? [] : [`${d.index}:${d.mig.profile}:${d.mig.instance}`],
    );
    if (mig.length > 0) env.KILN_MIG_INSTANCES = mig.join(',');
  }
  return env;
}
