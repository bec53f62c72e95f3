// An endpoint's traffic policy (routing snapshot `traffic`) compiled for the hot path, once
// per snapshot, beside its EndpointEntry (route-table.ts):
//   - the split (traffic-split.ts) and the caller-key and slice sources (caller-key.ts);
//   - one EndpointEntry per variant, in the split's order, with the variant's own request
//     check, replicas, metric series and version counter (the endpoint's gate, bucket, name
//     and paths): a request picked for a variant is checked and sent as if the variant were
//     the endpoint, and answers with its version;
//   - one ShadowEntry per shadow version.
// A request keeps its bucket (0..9 999), not its variant: a newer snapshot's table maps the
// same bucket through its own split, so a request re-picked mid-flight lands where a new
// request of the same user would.

import type { IncomingHttpHeaders } from 'node:http';
import { parseJsonLenient } from '../protocol/v2/lenient-json.ts';
import { maxSliceValueLength, SLICE_HEADER } from '../protocol/traffic/traffic-report.ts';
import {
  CALLER_KEY_HEADER,
  callerKey,
  compileCallerKey,
  type CallerKeySource,
} from '../traffic/caller-key.ts';
import { TrafficSplit, type RandomSource, type ShadowVersion } from '../traffic/traffic-split.ts';
import type { ReplicaState } from './replica-set.ts';
import type { CompiledNaming } from '../protocol/v2/input-naming.ts';
import type { RequestCheck } from './request-check.ts';
import type { EndpointTrafficCounter, ShadowCounter, VersionCounter } from './traffic-counter.ts';
import { answerOutputs, outputColumn, type AnswerOutput } from './answer-outputs.ts';
import { maxOutputValuesPerAnswer } from '../protocol/traffic/traffic-report.ts';

/** Where a request falls in a policy: its bucket (sticky by caller key) and its slice value. */
export interface Placement {
  readonly bucket: number;
  /** null: none (counted in `overall` only). */
  readonly slice: string | null;
}

/** What of an EndpointEntry a variant entry needs (kept minimal to avoid an import cycle). */
export interface VariantTarget {
  readonly model: string;
  readonly version: number;
  readonly replicas: readonly ReplicaState[];
  /** Its version's counter (null: an endpoint's own entry, looked up when counted). */
  readonly counts: VersionCounter | null;
}

export interface ShadowEntry {
  readonly model: string;
  readonly version: number;
  readonly sampleRate: number;
  /** null: the snapshot has no schema for it (copies go unchecked, the worker checks). */
  readonly check: RequestCheck | null;
  readonly requestKey: string;
  readonly naming: CompiledNaming | null;
  readonly replicas: readonly ReplicaState[];
  readonly counts: ShadowCounter;
  /** Rotating start for replica choice. */
  cursor: number;
}

export class TrafficEntry<Variant extends VariantTarget> {
  readonly split: TrafficSplit;
  readonly keySource: CallerKeySource;
  /** null: no slice key, no slices counted. */
  readonly sliceSource: CallerKeySource | null;
  /** Whether the pick needs the body (a key path or slice path is set). */
  readonly readsBody: boolean;
  /** Per split version (same order): the entry its requests go to (see `entryAt`). */
  private readonly served: readonly Variant[];
  private readonly byVersion: ReadonlyMap<object, Variant>;
  private readonly shadowByVersion: ReadonlyMap<object, ShadowEntry>;

  constructor(
    split: TrafficSplit,
    keySource: CallerKeySource,
    sliceSource: CallerKeySource | null,
    /** One per split version, in its order. */
    readonly variants: readonly Variant[],
    /** One per split shadow, in its order. */
    readonly shadows: readonly ShadowEntry[],
    readonly counter: EndpointTrafficCounter,
  ) {
    this.split = split;
    this.keySource = keySource;
    this.sliceSource = sliceSource;
    this.readsBody = keySource.segments.length > 0 || (sliceSource?.segments.length ?? 0) > 0;
    // A variant with no ready replica gives its requests to the first variant that has one
    // (they count where they are served); none has one: each keeps its own (503).
    const fallback = variants.find((v) => v.replicas.length > 0);
    this.served = variants.map((v) => (v.replicas.length > 0 ? v : (fallback ?? v)));
    const byVersion = new Map<object, Variant>();
    split.versions.forEach((version, i) => byVersion.set(version, this.served[i]!));
    this.byVersion = byVersion;
    const shadowByVersion = new Map<object, ShadowEntry>();
    split.shadows.forEach((version, i) => shadowByVersion.set(version, shadows[i]!));
    this.shadowByVersion = shadowByVersion;
  }

  /**
   * Places a request: its bucket by caller key (the `kiln-user` header, else the key path in
   * the body; none: a random draw) and its slice value (the `kiln-slice` header, else the
   * slice path). `body` is the parsed body, or its bytes, parsed only when a path is needed;
   * bytes that do not parse give neither (the request's check answers 400).
   */
  place(headers: IncomingHttpHeaders, body: Buffer | object): Placement {
    const keySource = this.keySource;
    const sliceSource = this.sliceSource;
    let key = callerKey(keySource, headers[CALLER_KEY_HEADER], undefined);
    let slice =
      sliceSource === null ? null : callerKey(sliceSource, headers[SLICE_HEADER], undefined);
    const keyFromBody = key === null && keySource.segments.length > 0;
    const sliceFromBody = slice === null && sliceSource !== null && sliceSource.segments.length > 0;
    if (keyFromBody || sliceFromBody) {
      let parsed: unknown = body;
      if (Buffer.isBuffer(body)) {
        const result = parseJsonLenient(body);
        parsed = result.ok ? result.value : undefined;
      }
      if (keyFromBody) key = callerKey(keySource, undefined, parsed);
      if (sliceFromBody) slice = callerKey(sliceSource, undefined, parsed);
    }
    return {
      bucket: this.split.bucketOf(key),
      slice:
        slice !== null && slice.length > maxSliceValueLength
          ? slice.slice(0, maxSliceValueLength)
          : slice,
    };
  }

  /** The entry serving a request in `bucket` (in [0, 10 000)). */
  entryAt(bucket: number): Variant {
    return this.byVersion.get(this.split.versionAt(bucket))!;
  }

  /**
   * Counts one finished request for the version that answered it: `replica` (null: the
   * gateway answered itself, so the version it was meant for, `meant`), its status, latency
   * from arrival and slice, and the outputs of `answer` (a 200's v2 body; null: none).
   * Returns the answer's outputs, for the shadows' comparison.
   */
  count(
    meant: VariantTarget,
    replica: ReplicaState | null,
    status: number,
    latencyMs: number,
    slice: string | null,
    answer: Buffer | null,
  ): AnswerOutput[] | null {
    const counts =
      replica !== null && (replica.version !== meant.version || replica.model !== meant.model)
        ? this.counter.version(replica.model, replica.version)
        : (meant.counts ?? this.counter.version(meant.model, meant.version));
    const outputs = answer === null ? null : answerOutputs(answer);
    const values = outputs === null ? null : outputColumn(outputs, maxOutputValuesPerAnswer);
    counts.record(status, latencyMs, slice, values);
    return outputs;
  }

  /** The shadows that get a copy of one request (sampled apart for each). */
  pickShadows(): readonly ShadowEntry[] {
    const chosen = this.split.pickShadows();
    if (chosen.length === 0) return noShadows;
    return chosen.map((version: ShadowVersion) => this.shadowByVersion.get(version)!);
  }
}

const noShadows: readonly ShadowEntry[] = [];

/** Compiles a caller-key or slice path of a snapshot; a bad one counts as none (logged). */
export function keySourceOf(
  path: string | null,
  onBad: (problem: string) => void,
): CallerKeySource {
  const compiled = compileCallerKey(path);
  if (compiled.ok) return compiled.source;
  onBad(compiled.problem);
  return { keyPath: null, segments: [] };
}

export function splitOf(
  endpoint: string,
  salt: string,
  versions: readonly { model: string; version: number; weight: number }[],
  shadows: readonly { model: string; version: number; sampleRate: number }[],
  random: RandomSource,
): TrafficSplit {
  return new TrafficSplit(
    {
      endpoint,
      salt,
      versions: versions.map(({ model, version, weight }) => ({ model, version, weight })),
      shadows: shadows.map(({ model, version, sampleRate }) => ({ model, version, sampleRate })),
    },
    random,
  );
}
