// Decides whether a version's signature satisfies the signing policy: at registration and
// again at every load, since keys can be revoked and policies tightened in between.

import { kilnError } from '../core/errors.ts';
import type { Store } from '../store/store.ts';
import type { ManifestSubject } from './manifest.ts';
import { parsePublicKey, verifyManifest, type ManifestSignature } from './signing.ts';

export type SignatureStatus = 'valid' | 'unsigned';

export async function enforceSignaturePolicy(
  store: Store,
  team: string,
  subject: ManifestSubject,
  signature: ManifestSignature | null,
): Promise<SignatureStatus> {
  const policy = await store.getSigningPolicy();
  const required = policy.teams[team]?.requireSignature ?? policy.requireSignature;
  if (signature === null) {
    if (required) throw kilnError('KILN_SIGNATURE_REQUIRED', { team });
    return 'unsigned';
  }
  const key = await store.getTrustedKey(signature.keyId);
  if (key === null) {
    throw kilnError('KILN_SIGNATURE_INVALID', {
      reason: `key ${signature.keyId} is not a trusted key`,
    });
  }
  if (key.team !== null && key.team !== team) {
    throw kilnError('KILN_SIGNATURE_INVALID', {
      reason: `key ${signature.keyId} is trusted for team ${key.team} only, and model ${subject.model} belongs to team ${team}`,
    });
  }
  const publicKey = parsePublicKey(key.publicKey);
  if (publicKey === null || !verifyManifest(subject, signature.signature, publicKey)) {
    throw kilnError('KILN_SIGNATURE_INVALID', {
      reason: `the signature by key ${signature.keyId} does not match the manifest of ${subject.model}`,
    });
  }
  return 'valid';
}
