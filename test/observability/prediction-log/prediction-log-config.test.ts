import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePredictionLogConfig } from '../../../src/observability/prediction-log/prediction-log-config.ts';
import { resolveQualityConfig } from '../../../src/observability/quality/quality-config.ts';
import { resolveObservabilityConfig } from '../../../src/observability/observability-input.ts';

function reason(result: { ok: boolean; reason?: string }): string {
  assert.equal(result.ok, false);
  return result.reason ?? '';
}

test('predictionLog: defaults filled; every field range-checked and named', () => {
  const resolved = resolvePredictionLogConfig({});
  assert.deepEqual(resolved, {
    ok: true,
    value: { sampleRate: 1, redact: [], maxFileBytes: 64 * 1024 * 1024, maxFiles: 8 },
  });
  assert.match(reason(resolvePredictionLogConfig({ sampleRate: 1.5 })), /sampleRate/);
  assert.match(reason(resolvePredictionLogConfig({ maxFileBytes: 10 })), /maxFileBytes/);
  assert.match(reason(resolvePredictionLogConfig({ maxFiles: 0 })), /maxFiles/);
  assert.match(reason(resolvePredictionLogConfig({ colour: 1 })), /unknown field colour/);
  assert.match(reason(resolvePredictionLogConfig({ redact: {} })), /redact must be an array/);
  assert.match(
    reason(resolvePredictionLogConfig({ redact: [{ field: 'ssn', action: 'blur' }] })),
    /redact\[0\]\.action/,
  );
  assert.match(
    reason(resolvePredictionLogConfig({ redact: [{ field: '', action: 'drop' }] })),
    /redact\[0\]\.field/,
  );
  assert.match(
    reason(
      resolvePredictionLogConfig({
        redact: [
          { field: 'ssn', action: 'drop' },
          { field: 'ssn', action: 'hash' },
        ],
      }),
    ),
    /redact\[1\]\.field ssn is named twice/,
  );
  const full = resolvePredictionLogConfig({
    sampleRate: 0.25,
    redact: [{ field: 'outputs.score', action: 'hash' }],
    maxFileBytes: 8192,
    maxFiles: 3,
  });
  assert.ok(full.ok);
  assert.deepEqual(full.value.redact, [{ field: 'outputs.score', action: 'hash' }]);
});

test('quality: task required, defaults filled, slice path compiled, regression has no threshold', () => {
  assert.match(reason(resolveQualityConfig({})), /task/);
  const resolved = resolveQualityConfig({ task: 'classification' });
  assert.deepEqual(resolved, {
    ok: true,
    value: {
      task: 'classification',
      output: null,
      threshold: 0.5,
      joinWindowMs: 86_400_000,
      sliceKey: null,
      slicePath: null,
    },
  });
  assert.match(reason(resolveQualityConfig({ task: 'regression', threshold: 0.2 })), /threshold/);
  assert.match(
    reason(resolveQualityConfig({ task: 'regression', joinWindowMs: 5 })),
    /joinWindowMs/,
  );
  assert.match(
    reason(resolveQualityConfig({ task: 'regression', sliceKey: 'country', slicePath: '$.[' })),
    /slicePath/,
  );
  assert.match(reason(resolveQualityConfig({ task: 'regression', slicePath: '$.a' })), /sliceKey/);
  assert.match(
    reason(resolveQualityConfig({ task: 'regression', extra: 1 })),
    /unknown field extra/,
  );
});

test('the whole settings name the part that is wrong', () => {
  assert.match(
    reason(resolveObservabilityConfig({ predictionLog: { maxFiles: -1 } })),
    /^predictionLog: maxFiles/,
  );
  assert.match(reason(resolveObservabilityConfig({ quality: { task: 'x' } })), /^quality: task/);
});
