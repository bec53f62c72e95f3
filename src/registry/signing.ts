// ed25519 signing of canonical manifests (node:crypto). Private keys stay with the client
// (the CLI signs); the platform stores only trusted public keys and verifies.

import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  createHash,
  type KeyObject,
} from 'node:crypto';
import { canonicalManifest, type ManifestSubject } from './manifest.ts';

export interface KeyPairPem {
  readonly privateKeyPem: string;
  readonly publicKeyPem: string;
  readonly keyId: string;
}

export interface ManifestSignature {
  readonly keyId: string;
  /** base64 ed25519 signature over the canonical manifest bytes. */
  readonly signature: string;
}

export function generateSigningKeyPair(): KeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem,
    keyId: keyIdOf(publicKey),
  };
}

/** Parses an SPKI PEM ed25519 public key; returns null (not an exception) if it is not one. */
export function parsePublicKey(pem: string): KeyObject | null {
  try {
    const key = createPublicKey({ key: pem, format: 'pem' });
    return key.asymmetricKeyType === 'ed25519' ? key : null;
  } catch {
    return null;
  }
}

export function parsePrivateKey(pem: string): KeyObject | null {
  try {
    const key = createPrivateKey({ key: pem, format: 'pem' });
    return key.asymmetricKeyType === 'ed25519' ? key : null;
  } catch {
    return null;
  }
}

/** First 16 hex characters of the sha256 of the raw 32-byte public key. */
export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  // An ed25519 SPKI DER is a fixed 12-byte prefix followed by the 32 raw key bytes.
  const raw = der.subarray(der.length - 32);
  return createHash('sha256').update(raw).digest('hex').slice(0, 16);
}

export function signManifest(subject: ManifestSubject, privateKey: KeyObject): ManifestSignature {
  const publicKey = createPublicKey(privateKey);
  const signature = sign(null, canonicalManifest(subject), privateKey).toString('base64');
  return { keyId: keyIdOf(publicKey), signature };
}

export function verifyManifest(
  subject: ManifestSubject,
  signature: string,
  publicKey: KeyObject,
): boolean {
  const bytes = Buffer.from(signature, 'base64');
  if (bytes.length !== 64) return false;
  try {
    return verify(null, canonicalManifest(subject), publicKey, bytes);
  } catch {
    return false;
  }
}
