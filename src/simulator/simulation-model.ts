// What the simulator knows of the replicas it models (issue 14): how many requests one
// replica serves at once, how long each takes, and per instance type how long a replica
// takes to start and what an hour of it costs. A model file is this as JSON:
//
//   {
//     "concurrencyPerReplica": 4,
//     "serviceTimeMs": {"kind": "exponential", "meanMs": 40},
//     "instanceTypes": {"cpu-small": {"startupMs": 2000, "usdPerHour": 0.10}},
//     "defaultInstanceType": "cpu-small"
//   }
//
// `serviceTimeMs` is any ServiceTimeSpec (service-time.ts); `defaultInstanceType` may be left
// out when there is one type. `kiln simulate --endpoint E` replaces the service times (and the
// start-up time, when measured) with the endpoint's measured ones.

import { serviceTimeSampler, type ServiceTimeSpec } from './service-time.ts';

export interface InstanceType {
  /** Replica start → ready, ms (>= 0). */
  readonly startupMs: number;
  /** Cost of one replica for an hour (>= 0). */
  readonly usdPerHour: number;
}

export interface SimulationModel {
  /** Requests one replica serves at once (its slots); more wait in its FIFO queue. */
  readonly concurrencyPerReplica: number;
  readonly serviceTime: ServiceTimeSpec;
  readonly instanceTypes: Readonly<Record<string, InstanceType>>;
  readonly defaultInstanceType: string;
}

export type SimulationModelCheck =
  | { readonly ok: true; readonly model: SimulationModel }
  | { readonly ok: false; readonly reason: string };

/** Checks a model as written in a model file (parsed JSON). */
export function parseSimulationModel(input: unknown): SimulationModelCheck {
  if (!isRecord(input)) return fail('a model must be a JSON object');
  const known = ['concurrencyPerReplica', 'serviceTimeMs', 'instanceTypes', 'defaultInstanceType'];
  const unknown = Object.keys(input).filter((key) => !known.includes(key));
  if (unknown.length > 0) return fail(`unknown field ${unknown[0]} (known: ${known.join(', ')})`);
  const concurrency = input.concurrencyPerReplica;
  if (!(typeof concurrency === 'number' && Number.isInteger(concurrency) && concurrency >= 1)) {
    return fail(`concurrencyPerReplica must be an integer >= 1, got ${show(concurrency)}`);
  }
  const service = parseServiceTimeSpec(input.serviceTimeMs);
  if (typeof service === 'string') return fail(`serviceTimeMs: ${service}`);
  if (!isRecord(input.instanceTypes) || Object.keys(input.instanceTypes).length === 0) {
    return fail('instanceTypes must be an object of {name: {startupMs, usdPerHour}}');
  }
  const instanceTypes: Record<string, InstanceType> = {};
  for (const [name, value] of Object.entries(input.instanceTypes)) {
    if (!isRecord(value)) return fail(`instanceTypes.${name} must be {startupMs, usdPerHour}`);
    const { startupMs, usdPerHour } = value;
    if (!(typeof startupMs === 'number' && Number.isFinite(startupMs) && startupMs >= 0)) {
      return fail(`instanceTypes.${name}.startupMs must be >= 0, got ${show(startupMs)}`);
    }
    if (!(typeof usdPerHour === 'number' && Number.isFinite(usdPerHour) && usdPerHour >= 0)) {
      return fail(`instanceTypes.${name}.usdPerHour must be >= 0, got ${show(usdPerHour)}`);
    }
    instanceTypes[name] = { startupMs, usdPerHour };
  }
  const names = Object.keys(instanceTypes);
  const chosen = input.defaultInstanceType ?? (names.length === 1 ? names[0] : undefined);
  if (typeof chosen !== 'string' || !(chosen in instanceTypes)) {
    return fail(
      `defaultInstanceType must name one of the instanceTypes (${names.join(', ')}), got ${show(chosen)}`,
    );
  }
  return {
    ok: true,
    model: {
      concurrencyPerReplica: concurrency,
      serviceTime: service,
      instanceTypes,
      defaultInstanceType: chosen,
    },
  };
}

/** A ServiceTimeSpec from JSON, or the reason it is not one. */
export function parseServiceTimeSpec(input: unknown): ServiceTimeSpec | string {
  if (!isRecord(input)) return 'must be an object with a kind';
  let spec: ServiceTimeSpec;
  switch (input.kind) {
    case 'exponential':
      spec = { kind: 'exponential', meanMs: Number(input.meanMs) };
      break;
    case 'constant':
      spec = { kind: 'constant', ms: Number(input.ms) };
      break;
    case 'samples':
      if (!Array.isArray(input.ms)) return 'samples needs ms: [numbers]';
      spec = { kind: 'samples', ms: input.ms.map(Number) };
      break;
    case 'quantiles':
      if (!Array.isArray(input.points)) return 'quantiles needs points: [{q, ms}]';
      spec = {
        kind: 'quantiles',
        points: input.points.map((p: unknown) =>
          isRecord(p) ? { q: Number(p.q), ms: Number(p.ms) } : { q: NaN, ms: NaN },
        ),
      };
      break;
    case 'sketch': {
      const sketch = input.sketch;
      if (!isRecord(sketch) || !Array.isArray(sketch.positive)) {
        return 'sketch needs a HistogramSketch snapshot {relativeAccuracy, zeroCount, positive, negative}';
      }
      spec = {
        kind: 'sketch',
        sketch: {
          relativeAccuracy: Number(sketch.relativeAccuracy),
          zeroCount: Number(sketch.zeroCount ?? 0),
          positive: sketch.positive.map((pair: unknown) =>
            Array.isArray(pair)
              ? ([Number(pair[0]), Number(pair[1])] as const)
              : ([NaN, NaN] as const),
          ),
          negative: [],
        },
      };
      break;
    }
    default:
      return `unknown kind ${show(input.kind)} (one of: exponential, constant, samples, quantiles, sketch)`;
  }
  const check = serviceTimeSampler(spec);
  return check.ok ? spec : check.reason;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return value === undefined ? '(missing)' : JSON.stringify(value);
}

function fail(reason: string): SimulationModelCheck {
  return { ok: false, reason };
}
