import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkObservabilityFields } from '../../../src/control/observability/observability-deploy-check.ts';
import { KilnError } from '../../../src/core/errors.ts';
import type { ObservabilityConfig } from '../../../src/store/observability-config.ts';

const version = {
  schema: {
    inputs: [{ name: 'input-0', datatype: 'FP32' as const, shape: [-1, 3] }],
    outputs: [{ name: 'proba', datatype: 'FP32' as const, shape: [-1, 2] }],
  },
  formatInfo: { featureNames: ['age', 'income', 'ssn'] },
};

function withRules(...fields: string[]): ObservabilityConfig {
  return {
    predictionLog: {
      sampleRate: 1,
      redact: fields.map((field) => ({ field, action: 'drop' as const })),
      maxFileBytes: 1 << 20,
      maxFiles: 2,
    },
  };
}

test('a redaction rule naming nothing the version has is refused at deploy, naming it', () => {
  assert.throws(
    () => checkObservabilityFields('fraud', withRules('ssn', 'snn', 'outputs.label'), version),
    (error: unknown) =>
      error instanceof KilnError &&
      error.code === 'KILN_OBSERVABILITY_INVALID' &&
      /redact names snn, outputs\.label, which the version does not have/.test(error.message),
  );
});

test('rules naming inputs, features, outputs or parameters pass; no schema: not checked', () => {
  checkObservabilityFields(
    'fraud',
    withRules('input-0', 'ssn', 'outputs.proba', 'parameters.user'),
    version,
  );
  checkObservabilityFields('fraud', withRules('anything'), { schema: null, formatInfo: {} });
  checkObservabilityFields('fraud', undefined, version);
});

test('a quality output the version does not have is refused at deploy, naming its outputs', () => {
  const quality = (output: string | null): ObservabilityConfig => ({
    quality: {
      task: 'classification',
      output,
      threshold: 0.5,
      joinWindowMs: 60_000,
      sliceKey: null,
      slicePath: null,
    },
  });
  assert.throws(
    () => checkObservabilityFields('fraud', quality('label'), version),
    /quality: output label is not an output of the version \(its outputs: proba\)/,
  );
  checkObservabilityFields('fraud', quality('proba'), version);
  checkObservabilityFields('fraud', quality(null), version);
});
