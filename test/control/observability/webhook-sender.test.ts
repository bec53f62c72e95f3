// Alert webhooks: a webhook that hangs or fails never blocks the sender (send returns at
// once, other webhooks are served meanwhile), is bounded per attempt, retried with backoff,
// then given up, logged and counted; a full queue drops and counts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebhookSender } from '../../../src/control/observability/slo/webhook-sender.ts';
import { until } from '../../helpers/until.ts';

interface Receiver {
  readonly url: string;
  readonly hits: Map<string, number>;
  readonly bodies: unknown[];
}

async function receiver(t: { after: (fn: () => Promise<void>) => void }): Promise<Receiver> {
  const hits = new Map<string, number>();
  const bodies: unknown[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (path === '/hang') {
        hanging.push(res); // never answered
        return;
      }
      if (path === '/ok') {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.end('ok');
        return;
      }
      res.statusCode = path === '/bad' ? 400 : 500;
      res.end('no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, bodies };
}

test('a hanging webhook neither blocks send nor the other webhooks; it times out, retries, gives up, logged and counted', async (t) => {
  const hooks = await receiver(t);
  const lines: string[] = [];
  const sender = new WebhookSender({
    attemptTimeoutMs: 1000,
    maxAttempts: 2,
    backoffMs: 10,
    concurrency: 2,
    log: (line) => lines.push(line),
  });
  t.after(() => sender.close());
  assert.equal(sender.send(`${hooks.url}/hang`, { alert: 'availability-page' }), true);
  assert.equal(sender.send(`${hooks.url}/ok`, { alert: 'availability-page' }), true);
  // Both handed over at once; the good webhook is served while the other hangs.
  await until(() => sender.stats().sent === 1, 'the good webhook to be served');
  assert.deepEqual(hooks.bodies, [{ alert: 'availability-page' }]);
  assert.equal(sender.stats().failed, 0);
  assert.equal(sender.stats().pending, 1);
  await until(() => sender.stats().failed === 1, 'the hanging webhook to be given up');
  assert.equal(hooks.hits.get('/hang'), 2);
  assert.deepEqual(
    { ...sender.stats() },
    { sent: 1, failed: 1, dropped: 0, retried: 1, pending: 0 },
  );
  assert.match(lines.join('\n'), /\/hang: no answer within 1000 ms; gave up after 2 attempt\(s\)/);
});

test('a 5xx is retried with backoff, a 4xx is not; a refused connection is counted as failed', async (t) => {
  const hooks = await receiver(t);
  const lines: string[] = [];
  const sender = new WebhookSender({ maxAttempts: 3, backoffMs: 5, log: (l) => lines.push(l) });
  t.after(() => sender.close());
  sender.send(`${hooks.url}/fail`, { n: 1 });
  sender.send(`${hooks.url}/bad`, { n: 2 });
  sender.send('http://127.0.0.1:1/nothing-listens', { n: 3 });
  await until(() => sender.stats().failed === 3, 'three deliveries to be given up');
  assert.equal(hooks.hits.get('/fail'), 3);
  assert.equal(hooks.hits.get('/bad'), 1);
  assert.match(lines.join('\n'), /\/fail: HTTP 500; gave up after 3 attempt/);
  assert.match(lines.join('\n'), /\/bad: HTTP 400; gave up after 1 attempt/);
  assert.match(lines.join('\n'), /nothing-listens: .*gave up after 3 attempt/);
});

test('a full queue drops the new notification and counts it, never waits', async (t) => {
  const hooks = await receiver(t);
  const sender = new WebhookSender({ queueLimit: 2, concurrency: 1, attemptTimeoutMs: 10_000 });
  t.after(() => sender.close());
  assert.equal(sender.send(`${hooks.url}/hang`, { n: 1 }), true);
  assert.equal(sender.send(`${hooks.url}/hang`, { n: 2 }), true);
  assert.equal(sender.send(`${hooks.url}/ok`, { n: 3 }), false);
  assert.equal(sender.stats().dropped, 1);
  assert.equal(sender.stats().pending, 2);
  sender.close();
  assert.equal(sender.send(`${hooks.url}/ok`, { n: 4 }), false);
});
