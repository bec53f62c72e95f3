// The cost price table (issue 15 E): a file is checked entry by entry and every problem named
// (KILN_PRICES_INVALID); what a file leaves out takes the documented defaults.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { KilnError } from '../../../src/core/errors.ts';
import {
  defaultPriceTable,
  parsePriceTable,
  shapeUsdPerHour,
} from '../../../src/observability/cost/price-table.ts';
import { loadPrices } from '../../../src/control/observability/load-prices.ts';
import { tempDir } from '../../helpers/temp-dir.ts';

function refused(value: unknown, pattern: RegExp): void {
  assert.throws(
    () => parsePriceTable(value, 'prices.json'),
    (error: unknown) => {
      assert.ok(error instanceof KilnError, String(error));
      assert.equal(error.code, 'KILN_PRICES_INVALID');
      assert.equal(error.status, 400);
      assert.match(error.message, /prices\.json/);
      assert.match(error.message, pattern);
      return true;
    },
  );
}

test('a full price table is read as given; spot defaults to on-demand', () => {
  const table = parsePriceTable(
    {
      cpu: { onDemand: 0.05, spot: 0.02 },
      memoryGiB: { onDemand: 0.01 },
      accelerators: { L4: { onDemand: 0.8, spot: 0.3 } },
    },
    'prices.json',
  );
  assert.deepEqual(table, {
    cpu: { onDemandUsdPerHour: 0.05, spotUsdPerHour: 0.02 },
    memoryGiB: { onDemandUsdPerHour: 0.01, spotUsdPerHour: 0.01 },
    accelerators: { L4: { onDemandUsdPerHour: 0.8, spotUsdPerHour: 0.3 } },
  });
  // 2 cores + 4 GiB + half an L4 on spot: 2 × 0.02 + 4 × 0.01 + 0.5 × 0.3
  const usd = shapeUsdPerHour(table, {
    cpu: 2,
    memoryGiB: 4,
    acceleratorType: 'L4',
    accelerators: 0.5,
    capacity: 'spot',
  });
  assert.ok(Math.abs(usd - (0.04 + 0.04 + 0.15)) < 1e-12, String(usd));
  // A device type the table does not price (no `*`) adds nothing.
  assert.equal(
    shapeUsdPerHour(table, {
      cpu: 1,
      memoryGiB: 0,
      acceleratorType: 'H100-80GB',
      accelerators: 1,
      capacity: 'on-demand',
    }),
    0.05,
  );
});

test('entries a file leaves out take the defaults; an empty object is the default table', () => {
  assert.deepEqual(parsePriceTable({}, 'p'), defaultPriceTable);
  const onlyCpu = parsePriceTable({ cpu: { onDemand: 1 } }, 'p');
  assert.equal(onlyCpu.memoryGiB, defaultPriceTable.memoryGiB);
  assert.equal(onlyCpu.accelerators, defaultPriceTable.accelerators);
  // `*` prices the types the defaults do not list.
  assert.equal(
    shapeUsdPerHour(defaultPriceTable, {
      cpu: 0,
      memoryGiB: 0,
      acceleratorType: 'MI300X',
      accelerators: 1,
      capacity: 'on-demand',
    }),
    defaultPriceTable.accelerators['*']!.onDemandUsdPerHour,
  );
});

test('bad price tables are refused naming the entry', () => {
  refused([], /must be a JSON object/);
  refused('cheap', /must be a JSON object/);
  refused({ gpu: {} }, /unknown entry "gpu"/);
  refused({ cpu: 0.05 }, /cpu must be an object/);
  refused({ cpu: { spot: 0.01 } }, /cpu\.onDemand is required/);
  refused(
    { cpu: { onDemand: -1 } },
    /cpu\.onDemand must be a price in USD per hour >= 0 \(got -1\)/,
  );
  refused({ memoryGiB: { onDemand: '0.01' } }, /memoryGiB\.onDemand must be a price/);
  refused({ memoryGiB: { onDemand: 0.01, spot: null } }, /memoryGiB\.spot must be a price/);
  refused({ cpu: { onDemand: 1, reserved: 0.5 } }, /cpu: unknown field "reserved"/);
  refused({ accelerators: [] }, /accelerators must be an object/);
  refused(
    { accelerators: { L4: { onDemand: 0.8, spot: -0.1 } } },
    /accelerators\.L4\.spot must be/,
  );
  refused({ accelerators: { A100: 3 } }, /accelerators\.A100 must be an object/);
  refused({ accelerators: { '': { onDemand: 1 } } }, /device type "" must be 1 to 64 characters/);
});

test('loadPrices: --prices FILE, else <home>/prices.json, else the defaults; a bad file refuses', async () => {
  const home = await tempDir();
  assert.deepEqual(await loadPrices(home), { prices: defaultPriceTable, source: null });
  const inHome = join(home, 'prices.json');
  await writeFile(inHome, JSON.stringify({ cpu: { onDemand: 0.1 } }));
  const loaded = await loadPrices(home);
  assert.equal(loaded.source, inHome);
  assert.equal(loaded.prices.cpu.onDemandUsdPerHour, 0.1);
  const other = join(home, 'other.json');
  await writeFile(other, '{"cpu": ');
  await assert.rejects(loadPrices(home, other), /invalid price table .*other\.json: not JSON/);
  await assert.rejects(
    loadPrices(home, join(home, 'missing.json')),
    /invalid price table .*missing\.json: no such file/,
  );
  await writeFile(inHome, JSON.stringify({ cpu: { onDemand: 'free' } }));
  await assert.rejects(loadPrices(home), (error: unknown) => {
    assert.ok(error instanceof KilnError && error.code === 'KILN_PRICES_INVALID');
    assert.match(error.message, /cpu\.onDemand/);
    return true;
  });
});
