import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson, canonicalManifest, manifestDigest } from '../../src/registry/manifest.ts';
import {
  generateSigningKeyPair,
  keyIdOf,
  parsePrivateKey,
  parsePublicKey,
  signManifest,
  verifyManifest,
} from '../../src/registry/signing.ts';

const files = [
  { path: 'b.bin', size: 2, sha256: 'b'.repeat(64) },
  { path: 'a.json', size: 1, sha256: 'a'.repeat(64) },
];

test('canonical JSON sorts keys at every level and drops undefined', () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } }),
    '{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
  );
});

test('the canonical manifest does not depend on file order', () => {
  const one = canonicalManifest({ model: 'm', format: 'onnx', files });
  const two = canonicalManifest({ model: 'm', format: 'onnx', files: [...files].reverse() });
  assert.deepEqual(one, two);
  assert.equal(
    one.toString(),
    `{"files":[{"path":"a.json","sha256":"${'a'.repeat(64)}","size":1},{"path":"b.bin","sha256":"${'b'.repeat(64)}","size":2}],"format":"onnx","kind":"kiln-manifest/v1","model":"m"}`,
  );
  assert.match(manifestDigest({ model: 'm', format: 'onnx', files }), /^[0-9a-f]{64}$/);
});

test('ed25519 signatures verify, and fail for any change of model, format, file or key', () => {
  const pair = generateSigningKeyPair();
  const privateKey = parsePrivateKey(pair.privateKeyPem);
  const publicKey = parsePublicKey(pair.publicKeyPem);
  assert.ok(privateKey !== null && publicKey !== null);
  assert.equal(keyIdOf(publicKey), pair.keyId);
  assert.match(pair.keyId, /^[0-9a-f]{16}$/);
  const subject = { model: 'm', format: 'onnx', files };
  const sig = signManifest(subject, privateKey);
  assert.equal(sig.keyId, pair.keyId);
  assert.equal(verifyManifest(subject, sig.signature, publicKey), true);
  assert.equal(verifyManifest({ ...subject, model: 'n' }, sig.signature, publicKey), false);
  assert.equal(verifyManifest({ ...subject, format: 'xgboost' }, sig.signature, publicKey), false);
  const changed = [{ ...files[0]!, sha256: 'c'.repeat(64) }, files[1]!];
  assert.equal(verifyManifest({ ...subject, files: changed }, sig.signature, publicKey), false);
  const other = parsePublicKey(generateSigningKeyPair().publicKeyPem);
  assert.ok(other !== null);
  assert.equal(verifyManifest(subject, sig.signature, other), false);
  assert.equal(verifyManifest(subject, 'not base64 at all', publicKey), false);
});

test('keys that are not ed25519 PEM are rejected as values', () => {
  assert.equal(parsePublicKey('nonsense'), null);
  assert.equal(parsePrivateKey(generateSigningKeyPair().publicKeyPem), null);
});
