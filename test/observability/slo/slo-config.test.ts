// The `slo` part of an endpoint's observability settings: every field checked and named,
// defaults filled (docs/slo.md).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveSloConfig } from '../../../src/observability/slo/slo-config.ts';
import { resolveObservabilityConfig } from '../../../src/observability/observability-input.ts';

function reason(input: unknown): string {
  const result = resolveSloConfig(input);
  assert.equal(result.ok, false, `expected ${JSON.stringify(input)} to be refused`);
  return result.ok ? '' : result.reason;
}

test('fills the defaults: a latency objective alone is a p99 one, no webhooks', () => {
  assert.deepEqual(resolveSloConfig({ latencyMs: 250 }), {
    ok: true,
    value: {
      availability: null,
      latencyMs: 250,
      latencyTarget: 0.99,
      driftPsiCeiling: null,
      webhooks: [],
    },
  });
  assert.deepEqual(
    resolveSloConfig({
      availability: 0.999,
      latencyMs: 100,
      latencyTarget: 0.95,
      driftPsiCeiling: 0.25,
      webhooks: ['https://hooks.example/slo', 'http://127.0.0.1:9000/alerts'],
    }),
    {
      ok: true,
      value: {
        availability: 0.999,
        latencyMs: 100,
        latencyTarget: 0.95,
        driftPsiCeiling: 0.25,
        webhooks: ['https://hooks.example/slo', 'http://127.0.0.1:9000/alerts'],
      },
    },
  );
});

test('each out-of-range or malformed field is refused by name', () => {
  assert.match(reason([]), /must be an object/);
  assert.match(reason({ availability: 1 }), /availability must be a number in \(0, 1\)/);
  assert.match(reason({ availability: 0 }), /availability must be a number in \(0, 1\)/);
  assert.match(reason({ availability: '99.9' }), /availability must be a number in \(0, 1\)/);
  assert.match(reason({ latencyMs: 0 }), /latencyMs must be a number > 0/);
  assert.match(reason({ latencyMs: -5 }), /latencyMs must be a number > 0/);
  assert.match(
    reason({ latencyMs: 100, latencyTarget: 1.5 }),
    /latencyTarget must be a number in \(0, 1\)/,
  );
  assert.match(reason({ availability: 0.99, latencyTarget: 0.9 }), /latencyTarget needs latencyMs/);
  assert.match(reason({ driftPsiCeiling: 0 }), /driftPsiCeiling must be a number > 0/);
  assert.match(reason({ availability: 0.99, webhooks: 'http://x' }), /webhooks must be a list/);
  assert.match(
    reason({ availability: 0.99, webhooks: ['ftp://x/y'] }),
    /webhooks\[0\] .* must be an http: or https: URL/,
  );
  assert.match(
    reason({ availability: 0.99, webhooks: ['http://a/', 'nope'] }),
    /webhooks\[1\] "nope" is not a URL/,
  );
  assert.match(
    reason({ availability: 0.99, webhooks: ['http://a/', 'http://a/'] }),
    /webhooks\[1\] .* listed twice/,
  );
  assert.match(
    reason({ availability: 0.99, pageAfter: 3 }),
    /unknown field pageAfter \(known: availability/,
  );
  assert.match(reason({ webhooks: ['http://a/'] }), /set at least one objective/);
});

test('through the whole observability check the part is named (KILN_OBSERVABILITY_INVALID reason)', () => {
  const result = resolveObservabilityConfig({ slo: { availability: 2 } });
  assert.deepEqual(result, {
    ok: false,
    reason: 'slo: availability must be a number in (0, 1), e.g. 0.999',
  });
});
