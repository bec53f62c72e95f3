import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveDriftConfig } from '../../../src/observability/drift/drift-config.ts';
import { resolveObservabilityConfig } from '../../../src/observability/observability-input.ts';

test('an empty drift object turns sketches on with the defaults', () => {
  assert.deepEqual(resolveDriftConfig({}), {
    ok: true,
    value: {
      enabled: true,
      sliceKey: null,
      slicePath: null,
      windowMs: 300_000,
      sampleRate: 1,
      maxRequestsPerSecond: 200,
    },
  });
  const resolved = resolveObservabilityConfig({
    drift: { sliceKey: 'country', slicePath: '$.parameters.country', windowMs: 60_000 },
  });
  assert.deepEqual(resolved, {
    ok: true,
    value: {
      drift: {
        enabled: true,
        sliceKey: 'country',
        slicePath: '$.parameters.country',
        windowMs: 60_000,
        sampleRate: 1,
        maxRequestsPerSecond: 200,
      },
    },
  });
});

test('each bad drift field is named', () => {
  const reasonOf = (input: unknown): string => {
    const resolved = resolveObservabilityConfig({ drift: input });
    assert.equal(resolved.ok, false);
    return resolved.ok ? '' : resolved.reason;
  };
  assert.match(reasonOf([]), /^drift: must be an object/);
  assert.match(reasonOf({ window: 5 }), /^drift: unknown field window \(known: enabled/);
  assert.match(reasonOf({ enabled: 'yes' }), /^drift: enabled must be true or false/);
  assert.match(reasonOf({ sliceKey: '' }), /^drift: sliceKey must be a name/);
  assert.match(reasonOf({ sliceKey: 'a b' }), /^drift: sliceKey must be a name/);
  assert.match(reasonOf({ slicePath: '$.parameters.country' }), /slicePath needs a sliceKey/);
  assert.match(reasonOf({ sliceKey: 'c', slicePath: '$..x' }), /^drift: slicePath: /);
  assert.match(reasonOf({ sliceKey: 'c', slicePath: 7 }), /^drift: slicePath must be a key path/);
  assert.match(reasonOf({ windowMs: 999 }), /^drift: windowMs must be a whole number .* 1000 to/);
  assert.match(reasonOf({ windowMs: 1.5e3 + 0.5 }), /^drift: windowMs/);
  assert.match(reasonOf({ windowMs: 86_400_001 }), /^drift: windowMs/);
  assert.match(reasonOf({ sampleRate: 0 }), /^drift: sampleRate must be a number in \(0, 1\]/);
  assert.match(reasonOf({ sampleRate: 1.5 }), /^drift: sampleRate/);
  assert.match(reasonOf({ sampleRate: '0.5' }), /^drift: sampleRate/);
  assert.match(reasonOf({ maxRequestsPerSecond: 0 }), /^drift: maxRequestsPerSecond must be/);
  assert.match(reasonOf({ maxRequestsPerSecond: 2.5 }), /^drift: maxRequestsPerSecond/);
  const unlimited = resolveDriftConfig({ maxRequestsPerSecond: null });
  assert.ok(unlimited.ok && unlimited.value.maxRequestsPerSecond === null);
});
