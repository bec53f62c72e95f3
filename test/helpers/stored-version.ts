// A version row for store-level tests: a stand-in xgboost file (its blob need not exist: the
// store checks nothing of the artifact), no schema, no signature. Tests of what the store does
// with versions, endpoints and their traffic or scale records register it as often as needed.

import type { NewVersion } from '../../src/store/store.ts';

export function placeholderVersion(): NewVersion {
  return {
    format: 'xgboost',
    files: [{ path: 'model.json', size: 3, sha256: 'a'.repeat(64) }],
    sizeBytes: 3,
    manifestDigest: 'f'.repeat(64),
    schema: null,
    metadata: {},
    lineage: {},
    tags: {},
    formatInfo: {},
    external: null,
    signature: null,
  };
}
