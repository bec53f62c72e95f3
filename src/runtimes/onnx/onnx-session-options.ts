// onnxruntime session options from a version's serving config, with Kiln's defaults.
//
// Threads: a Kiln worker is one process serving one replica, and we scale by adding replicas
// (processes), not threads. onnxruntime's default (one intra-op thread per physical core, in
// every process) would make N replicas on one machine run N x cores spinning threads that
// fight over the same cores, so we default to ONE intra-op and ONE inter-op thread per
// replica. A model with large operators on a machine with few replicas can raise
// `intraOpThreads` (0 = onnxruntime's own default). Inter-op threads only matter when
// independent branches of the graph run concurrently, so asking for more than one also
// switches the session to onnxruntime's 'parallel' execution mode.

import type { InferenceSession } from 'onnxruntime-node';
import type { RuntimeConfig } from '../runtime.ts';

export const defaultIntraOpThreads = 1;
export const defaultInterOpThreads = 1;
export const defaultGraphOptimizationLevel = 'all';

const optimizationLevels = ['disabled', 'basic', 'extended', 'all'] as const;

/** onnxruntime's log severity 4 = fatal only. Every error it logs also reaches us as the
 * rejection of create() or run(), which we return as a value, and its warnings (e.g. about
 * initializers listed as graph inputs) are advice for the model's author, not its server. */
const fatalOnly = 4;

export type SessionOptionsOutcome =
  | { readonly ok: true; readonly options: InferenceSession.SessionOptions }
  | { readonly ok: false; readonly reason: string };

export function onnxSessionOptions(config: RuntimeConfig): SessionOptionsOutcome {
  const intraOpThreads = config.intraOpThreads ?? defaultIntraOpThreads;
  const interOpThreads = config.interOpThreads ?? defaultInterOpThreads;
  const level = config.graphOptimizationLevel ?? defaultGraphOptimizationLevel;
  for (const [name, value] of [
    ['intraOpThreads', intraOpThreads],
    ['interOpThreads', interOpThreads],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) {
      return {
        ok: false,
        reason: `onnx config: ${name} must be a whole number >= 0 (0 = onnxruntime's default), got ${String(value)}`,
      };
    }
  }
  if (!(optimizationLevels as readonly string[]).includes(level)) {
    return {
      ok: false,
      reason: `onnx config: graphOptimizationLevel must be one of ${optimizationLevels.join(', ')}, got '${String(level)}'`,
    };
  }
  return {
    ok: true,
    options: {
      executionProviders: ['cpu'],
      intraOpNumThreads: intraOpThreads,
      interOpNumThreads: interOpThreads,
      executionMode: interOpThreads === 1 ? 'sequential' : 'parallel',
      graphOptimizationLevel: level,
      logSeverityLevel: fatalOnly,
    },
  };
}
