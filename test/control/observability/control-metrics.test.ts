// The control plane's own /metrics (issue 15): one registry on the API port, in Prometheus's
// text format, for any caller that may read (autoscaling's and the observability parts').

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testPlatform } from '../../helpers/platform.ts';

test('GET /metrics on the control plane serves the shared registry to a reader, not to an anonymous caller', async () => {
  const platform = await testPlatform({ dev: false });
  const url = platform.url;
  platform.observability.metrics.registerMetric(
    new (await import('prom-client')).Gauge({
      name: 'kiln_test_gauge',
      help: 'a gauge this test sets',
      registers: [],
    }),
  );
  assert.equal((await fetch(`${url}/metrics`)).status, 401);
  const reply = await fetch(`${url}/metrics`, { headers: platform.admin });
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await reply.text();
  assert.match(text, /# TYPE kiln_test_gauge gauge/);
  assert.match(text, /# TYPE kiln_autoscale_\w+ /);
});
