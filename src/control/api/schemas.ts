// JSON Schemas for API request bodies and query strings, compiled once by Fastify's Ajv.
// Unknown properties are errors (additionalProperties: false), so a typo is a 400, not a
// silently ignored field.

import { modelFormats } from '../../registry/formats/artifact-file.ts';
import { tensorDatatypes } from '../../registry/types.ts';

const shortString = { type: 'string', minLength: 1, maxLength: 256 } as const;
const stringMap = {
  type: 'object',
  maxProperties: 256,
  additionalProperties: { type: 'string', maxLength: 4096 },
} as const;

const tensorSpec = {
  type: 'object',
  required: ['name', 'datatype', 'shape'],
  additionalProperties: false,
  properties: {
    name: shortString,
    datatype: { type: 'string', enum: [...tensorDatatypes] },
    shape: { type: 'array', maxItems: 32, items: { type: 'integer', minimum: -1 } },
  },
} as const;

export const modelNameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', maxLength: 256 } },
} as const;

export const createModelBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: shortString,
    team: shortString,
    description: { type: 'string', maxLength: 4096 },
  },
} as const;

export const pageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
    pageToken: { type: 'string', maxLength: 1024 },
    team: shortString,
    includeDeleted: { type: 'boolean', default: false },
  },
} as const;

export const lineageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
    pageToken: { type: 'string', maxLength: 1024 },
    dataset: { type: 'string', minLength: 1, maxLength: 2048 },
    datasetVersion: shortString,
    run: shortString,
    experiment: shortString,
  },
} as const;

export const registerVersionBody = {
  type: 'object',
  required: ['format', 'files'],
  additionalProperties: false,
  properties: {
    format: { type: 'string', enum: [...modelFormats] },
    files: {
      type: 'array',
      maxItems: 10_000,
      items: {
        type: 'object',
        required: ['path', 'size', 'sha256'],
        additionalProperties: false,
        properties: {
          path: { type: 'string', minLength: 1, maxLength: 1024 },
          size: { type: 'integer', minimum: 0 },
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
        },
      },
    },
    schema: {
      type: 'object',
      required: ['inputs', 'outputs'],
      additionalProperties: false,
      properties: {
        inputs: { type: 'array', maxItems: 1024, items: tensorSpec },
        outputs: { type: 'array', maxItems: 1024, items: tensorSpec },
      },
    },
    metadata: {
      type: 'object',
      additionalProperties: false,
      properties: {
        trainingJobId: shortString,
        datasetVersion: shortString,
        metrics: { type: 'object', maxProperties: 256, additionalProperties: { type: 'number' } },
        hardware: {
          type: 'object',
          additionalProperties: false,
          properties: {
            cpus: { type: 'number', minimum: 0 },
            memoryBytes: { type: 'integer', minimum: 0 },
            gpus: { type: 'integer', minimum: 0 },
            gpuMemoryBytes: { type: 'integer', minimum: 0 },
            accelerator: shortString,
          },
        },
        dependencies: stringMap,
        extra: stringMap,
      },
    },
    lineage: {
      type: 'object',
      additionalProperties: false,
      properties: {
        run: shortString,
        datasetUri: { type: 'string', minLength: 1, maxLength: 2048 },
        datasetVersion: shortString,
        experiment: shortString,
      },
    },
    tags: stringMap,
    external: {
      type: 'object',
      required: ['protocol'],
      additionalProperties: false,
      properties: {
        url: { type: 'string', maxLength: 2048 },
        image: { type: 'string', maxLength: 1024 },
        protocol: { type: 'string', enum: ['v2', 'openai'] },
      },
    },
    createModel: {
      type: 'object',
      additionalProperties: false,
      properties: { team: shortString, description: { type: 'string', maxLength: 4096 } },
    },
    signature: {
      type: 'object',
      required: ['keyId', 'signature'],
      additionalProperties: false,
      properties: {
        keyId: { type: 'string', pattern: '^[0-9a-f]{16}$' },
        signature: { type: 'string', maxLength: 200 },
      },
    },
  },
} as const;

export const aliasBody = {
  type: 'object',
  required: ['version'],
  additionalProperties: false,
  properties: { version: { type: 'integer', minimum: 1 } },
} as const;

export const trustKeyBody = {
  type: 'object',
  required: ['name', 'publicKey'],
  additionalProperties: false,
  properties: {
    name: shortString,
    publicKey: { type: 'string', maxLength: 4096 },
    team: shortString,
  },
} as const;

export const signingPolicyBody = {
  type: 'object',
  required: ['requireSignature'],
  additionalProperties: false,
  properties: { requireSignature: { type: 'boolean' }, team: shortString },
} as const;

export const gcBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    dryRun: { type: 'boolean', default: false },
    graceSeconds: { type: 'integer', minimum: 0, default: 3600 },
  },
} as const;

/** A newest-first list read page by page, from `since` (ISO 8601) on: audit log, history. */
export const pagedSinceQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
    pageToken: { type: 'string', maxLength: 1024 },
    since: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;
