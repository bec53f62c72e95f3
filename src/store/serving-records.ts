// Persisted serving state: endpoints (desired state for the reconciler) and API keys.

import type { RuntimeConfig } from '../runtimes/runtime.ts';

export interface EndpointConfig extends RuntimeConfig {
  /** Largest request body the gateway accepts for this endpoint, in bytes. */
  readonly maxBodyBytes?: number;
}

export interface EndpointRecord {
  readonly name: string;
  readonly team: string;
  readonly model: string;
  /** The resolved version the endpoint serves. */
  readonly version: number;
  /** What was asked at deploy: "3", "@champion" or "latest". */
  readonly ref: string;
  readonly replicas: number;
  readonly config: EndpointConfig;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface NewEndpoint {
  readonly name: string;
  readonly team: string;
  readonly model: string;
  readonly version: number;
  readonly ref: string;
  readonly replicas: number;
  readonly config: EndpointConfig;
}

export interface ApiKeyRecord {
  readonly id: string;
  readonly name: string;
  readonly sha256: string;
  /** First characters of the key, to recognise it in lists. */
  readonly prefix: string;
  readonly team: string | null;
  readonly endpoint: string | null;
  readonly createdAt: string;
}
