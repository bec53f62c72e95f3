// Signed manifests and the signing policy, at registration and again at load.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorCode, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import {
  generateSigningKeyPair,
  parsePrivateKey,
  signManifest,
} from '../../src/registry/signing.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;

function signer() {
  const pair = generateSigningKeyPair();
  const key = parsePrivateKey(pair.privateKeyPem);
  assert.ok(key !== null);
  return {
    ...pair,
    sign: (
      model: string,
      format: string,
      files: { path: string; size: number; sha256: string }[],
    ) => signManifest({ model, format, files }, key),
  };
}

test('signing policy: unsigned and badly signed versions are refused at registration', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${fixtures}mlp.onnx`);
  const manifest = files.map(({ path, size, sha256 }) => ({ path, size, sha256 }));
  const ci = signer();
  const trusted = await call(url, 'POST', '/api/v1/trusted-keys', {
    name: 'ci',
    publicKey: ci.publicKeyPem,
  });
  assert.equal(trusted.status, 201);
  assert.equal((trusted.body as { keyId: string }).keyId, ci.keyId);
  assert.equal(
    errorCode(
      await call(url, 'POST', '/api/v1/trusted-keys', { name: 'ci2', publicKey: ci.publicKeyPem }),
    ),
    'KILN_KEY_EXISTS',
  );
  assert.equal(
    errorCode(
      await call(url, 'POST', '/api/v1/trusted-keys', { name: 'bad', publicKey: 'not a key' }),
    ),
    'KILN_INVALID_KEY',
  );

  // no policy: unsigned is fine
  assert.equal((await register(url, 'm', 'onnx', files)).status, 201);
  const policy = await call(url, 'PUT', '/api/v1/policy/signing', { requireSignature: true });
  assert.deepEqual(policy.body, { signing: { requireSignature: true, teams: {} } });

  const unsigned = await register(url, 'm', 'onnx', files);
  assert.equal(unsigned.status, 403);
  assert.equal(errorCode(unsigned), 'KILN_SIGNATURE_REQUIRED');

  const signed = await register(url, 'm', 'onnx', files, {
    signature: ci.sign('m', 'onnx', manifest),
  });
  assert.equal(signed.status, 201, JSON.stringify(signed.body));
  assert.deepEqual((signed.body as { signature: unknown }).signature, {
    keyId: ci.keyId,
    signature: ci.sign('m', 'onnx', manifest).signature,
  });

  const wrongModel = await register(url, 'm', 'onnx', files, {
    signature: ci.sign('other', 'onnx', manifest),
  });
  assert.equal(errorCode(wrongModel), 'KILN_SIGNATURE_INVALID');
  const stranger = signer();
  const untrusted = await register(url, 'm', 'onnx', files, {
    signature: stranger.sign('m', 'onnx', manifest),
  });
  assert.equal(errorCode(untrusted), 'KILN_SIGNATURE_INVALID');
  assert.match(
    (untrusted.body as { error: { message: string } }).error.message,
    /not a trusted key/,
  );
  const garbage = await register(url, 'm', 'onnx', files, {
    signature: { keyId: ci.keyId, signature: 'AAAA' },
  });
  assert.equal(errorCode(garbage), 'KILN_SIGNATURE_INVALID');

  // versions registered before the policy fail verification at load now
  const old = await call(url, 'POST', '/api/v1/models/m/versions/1/verify');
  assert.equal(errorCode(old), 'KILN_SIGNATURE_REQUIRED');
  const good = await call(url, 'POST', '/api/v1/models/m/versions/2/verify');
  assert.equal((good.body as { signature: string }).signature, 'valid');
  // revoking the key makes its versions unloadable
  assert.equal((await call(url, 'DELETE', `/api/v1/trusted-keys/${ci.keyId}`)).status, 200);
  assert.equal(
    errorCode(await call(url, 'POST', '/api/v1/models/m/versions/2/verify')),
    'KILN_SIGNATURE_INVALID',
  );
  assert.equal(
    errorCode(await call(url, 'DELETE', `/api/v1/trusted-keys/${ci.keyId}`)),
    'KILN_KEY_NOT_FOUND',
  );
});

test('per-team policy and team-scoped keys', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  const manifest = files.map(({ path, size, sha256 }) => ({ path, size, sha256 }));
  await call(url, 'POST', '/api/v1/models', { name: 'risk-model', team: 'risk' });
  await call(url, 'POST', '/api/v1/models', { name: 'ads-model', team: 'ads' });
  await call(url, 'PUT', '/api/v1/policy/signing', { requireSignature: true, team: 'risk' });

  assert.equal(
    errorCode(await register(url, 'risk-model', 'xgboost', files)),
    'KILN_SIGNATURE_REQUIRED',
  );
  assert.equal((await register(url, 'ads-model', 'xgboost', files)).status, 201);

  const adsKey = signer();
  await call(url, 'POST', '/api/v1/trusted-keys', {
    name: 'ads-ci',
    publicKey: adsKey.publicKeyPem,
    team: 'ads',
  });
  const crossTeam = await register(url, 'risk-model', 'xgboost', files, {
    signature: adsKey.sign('risk-model', 'xgboost', manifest),
  });
  assert.equal(errorCode(crossTeam), 'KILN_SIGNATURE_INVALID');
  assert.match((crossTeam.body as { error: { message: string } }).error.message, /team ads only/);

  const riskKey = signer();
  await call(url, 'POST', '/api/v1/trusted-keys', {
    name: 'risk-ci',
    publicKey: riskKey.publicKeyPem,
    team: 'risk',
  });
  const ok = await register(url, 'risk-model', 'xgboost', files, {
    signature: riskKey.sign('risk-model', 'xgboost', manifest),
  });
  assert.equal(ok.status, 201);
  const listed = (await call(url, 'GET', '/api/v1/trusted-keys')).body as {
    items: { name: string; team: string }[];
  };
  assert.deepEqual(
    listed.items.map((k) => [k.name, k.team]),
    [
      ['ads-ci', 'ads'],
      ['risk-ci', 'risk'],
    ],
  );
  const policy = (await call(url, 'GET', '/api/v1/policy')).body;
  assert.deepEqual(policy, {
    signing: { requireSignature: false, teams: { risk: { requireSignature: true } } },
  });
});

test('an external version’s signature covers what it points at: it cannot be reused for another URL', async () => {
  const { url, registry } = await testPlatform();
  const ci = signer();
  const key = parsePrivateKey(ci.privateKeyPem);
  assert.ok(key !== null);
  assert.equal(
    (await call(url, 'POST', '/api/v1/trusted-keys', { name: 'ci', publicKey: ci.publicKeyPem }))
      .status,
    201,
  );
  await call(url, 'PUT', '/api/v1/policy/signing', { requireSignature: true });
  const external = { url: 'https://models.example/v2', protocol: 'v2' };
  const signature = signManifest({ model: 'ext', format: 'external', files: [], external }, key);
  const signed = await register(url, 'ext', 'external', [], { external, signature });
  assert.equal(signed.status, 201, JSON.stringify(signed.body));
  // The same signature on a version pointing elsewhere is not valid.
  const elsewhere = { url: 'https://evil.example/v2', protocol: 'v2' };
  const forged = await register(url, 'ext', 'external', [], { external: elsewhere, signature });
  assert.equal(errorCode(forged), 'KILN_SIGNATURE_INVALID');
  // And the signed one still verifies at load.
  const loaded = await registry.trustedVersion('ext', 1);
  assert.equal(loaded.signature, 'valid');
});
