// `kiln endpoints show` of an endpoint running several versions (traffic management): a
// Versions table with each one's roles, traffic share and ready replicas; an endpoint with one
// version shows none (its output is as before).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Endpoint } from '../../src/cli/api-types.ts';
import { endpointDetails } from '../../src/cli/commands/endpoints-render.ts';

const base: Endpoint = {
  name: 'fraud',
  team: 'risk',
  model: 'fraud-xgb',
  version: 3,
  ref: '3',
  format: 'xgboost',
  replicas: 1,
  config: {},
  createdAt: '2026-01-31T14:05:09.123Z',
  updatedAt: '2026-01-31T14:06:00.000Z',
  url: 'http://127.0.0.1:8000/v2/models/fraud',
  status: {
    ready: true,
    readyReplicas: 1,
    reason: null,
    maxConcurrency: 64,
    maxConcurrencySource: 'derived',
    replicas: [],
  },
};

const version = {
  model: 'fraud-xgb',
  weight: null,
  sampleRate: null,
  warmUntil: null,
  readyReplicas: 1,
  replicas: 1,
};

void test('several versions: one row each with roles, traffic and ready replicas', () => {
  const text = endpointDetails({
    ...base,
    status: {
      ...base.status,
      versions: [
        { ...version, version: 3, roles: ['stable', 'variant'], weight: 95 },
        { ...version, version: 4, roles: ['variant'], weight: 5, readyReplicas: 0 },
        { ...version, version: 5, roles: ['shadow'], sampleRate: 0.1 },
        { ...version, version: 2, roles: ['warm'], warmUntil: '2026-01-31T14:16:00.000Z' },
        { ...version, version: 1, roles: [] },
      ],
    },
  });
  const table = text.slice(text.indexOf('Versions\n'));
  const rows = table
    .trimEnd()
    .split('\n')
    .slice(2)
    .map((line) => line.trim().split(/\s{2,}/));
  assert.deepEqual(rows, [
    ['fraud-xgb:3', 'stable, variant', '95%', '1/1', '-'],
    ['fraud-xgb:4', 'variant', '5%', '0/1', '-'],
    ['fraud-xgb:5', 'shadow', 'copies 0.1', '1/1', '-'],
    ['fraud-xgb:2', 'warm', '-', '1/1', '2026-01-31 14:16:00'],
    ['fraud-xgb:1', 'leaving', '-', '1/1', '-'],
  ]);
});

void test('one version, or an older control plane without the list: no Versions table', () => {
  assert.ok(!endpointDetails(base).includes('Versions'));
  const one = [{ ...version, version: 3, roles: ['stable' as const], weight: 100 }];
  assert.ok(
    !endpointDetails({ ...base, status: { ...base.status, versions: one } }).includes('Versions'),
  );
});
