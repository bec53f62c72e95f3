// An hf-llm worker's `GET /kiln/v1/load` carries both reports: the router's (running,
// waiting, KV blocks, inflight — the gateway's LLM router reads them) and the autoscaler's
// (inFlight, queueDepth, cpu, threads, accelerator, custom: tokens/s and KV blocks), the
// latter measured while completions stream and seen falling back when it ends.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLlmLoadReport } from '../../../src/gateway/llm-replica-load.ts';
import { parseWorkerLoadReport } from '../../../src/protocol/scaling/worker-load-report.ts';
import { until } from '../../helpers/until.ts';
import { startLlmWorker } from './llm-worker-harness.ts';

test('while completions stream: tokens/s, KV blocks, CPU and in-flight; back to 0 after', async (t) => {
  const w = await startLlmWorker({ threads: 1 });
  t.after(() => w.close());
  const read = async (): Promise<{ body: unknown }> => {
    const response = await fetch(`${w.url}/kiln/v1/load`);
    assert.equal(response.status, 200);
    return { body: await response.json() };
  };
  const idle = parseWorkerLoadReport((await read()).body);
  assert.ok(idle !== null);
  assert.equal(idle.inFlight, 0);
  assert.equal(idle.queueDepth, 0);
  assert.equal(idle.threads, 1);
  assert.equal(idle.accelerator, null);
  assert.equal(idle.custom.kv_blocks_used, 0);

  // Completions back to back (each a stream read to its end) until a report taken during
  // one shows it: a single one may be over between two of the meter's samples.
  let generating = true;
  const loop = (async () => {
    while (generating) {
      const response = await fetch(`${w.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'tiny',
          prompt: 'The GNU General Public License',
          max_tokens: 400,
          ignore_eos: true,
          temperature: 0,
          stream: true,
        }),
      });
      assert.equal(response.status, 200);
      await response.text();
    }
  })();
  let busy = null as ReturnType<typeof parseWorkerLoadReport>;
  await until(async () => {
    const { body } = await read();
    busy = parseWorkerLoadReport(body);
    const router = parseLlmLoadReport(JSON.stringify(body));
    return (
      busy !== null &&
      router !== null &&
      router.inflight === busy.inFlight &&
      busy.inFlight === 1 &&
      (busy.custom.tokens_per_second ?? 0) > 0 &&
      (busy.custom.kv_blocks_used ?? 0) > 0 &&
      busy.cpu > 0
    );
  }, 'tokens flowing in the report');
  generating = false;
  await loop;
  await until(async () => {
    const report = parseWorkerLoadReport((await read()).body);
    return report !== null && report.inFlight === 0 && report.custom.tokens_per_second === 0;
  }, 'no tokens once the stream is gone');
});
