// /api/v1/blobs/{sha256}: streamed, content-addressed uploads. The body is never buffered:
// it flows through a hashing counter into a temp file, which becomes the blob only if the
// bytes match the declared digest (ArtifactStore.ingest; S3ArtifactStore.ingest then sends
// the verified file to the bucket).

import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { kilnError } from '../../core/errors.ts';
import { isSha256 } from '../../registry/artifact-store.ts';
import type { ArtifactStorage } from '../../registry/artifact-storage.ts';
import { uploadAccess } from '../access-policy.ts';

const blobParams = {
  type: 'object',
  required: ['sha256'],
  properties: { sha256: { type: 'string', maxLength: 128 } },
} as const;

function requireDigest(value: string): string {
  if (!isSha256(value)) throw kilnError('KILN_INVALID_DIGEST', { digest: JSON.stringify(value) });
  return value;
}

export function registerBlobRoutes(
  app: FastifyInstance,
  artifacts: ArtifactStorage,
  maxUploadBytes: number,
  /** Told of every blob stored (a first upload or a repair). */
  onStored: (sha256: string) => void = () => undefined,
): void {
  // Scoped so only these routes receive the raw request stream as their body.
  void app.register((scope, _options, done) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, parsed) => parsed(null, payload));

    scope.head<{ Params: { sha256: string } }>(
      '/api/v1/blobs/:sha256',
      { schema: { params: blobParams } },
      async (request, reply) => {
        const size = await artifacts.sizeOf(requireDigest(request.params.sha256));
        // The upload limit, so a client can refuse a blob too large before sending it (a
        // 413 sent mid-body comes to most clients as a broken connection, not as the 413).
        reply.header('kiln-max-upload-bytes', maxUploadBytes);
        if (size === null) return reply.code(404).send();
        return reply.code(200).header('content-length', size).send();
      },
    );

    scope.put<{ Params: { sha256: string } }>(
      '/api/v1/blobs/:sha256',
      { schema: { params: blobParams }, config: { access: uploadAccess } },
      async (request, reply) => {
        const digest = requireDigest(request.params.sha256);
        const header = request.headers['content-length'];
        const expectedSize = header === undefined ? undefined : Number(header);
        if (expectedSize !== undefined && expectedSize > maxUploadBytes) {
          // Refuse before reading a byte; close the connection rather than drain the body.
          reply.header('connection', 'close');
          throw kilnError('KILN_PAYLOAD_TOO_LARGE', { size: expectedSize, limit: maxUploadBytes });
        }
        const body = request.body as Readable | undefined;
        if (body === undefined) {
          const existing = await artifacts.sizeOf(digest);
          if (existing !== null)
            return reply.code(200).send({ sha256: digest, size: existing, created: false });
          throw kilnError('KILN_UPLOAD_INCOMPLETE', { received: 0, expected: expectedSize ?? 0 });
        }
        // Bytes sent are always checked and stored, even for a blob already here: that is
        // how a blob damaged on disk is repaired (clients skip what HEAD says is present).
        try {
          const result = await artifacts.ingest(body, digest, {
            expectedSize,
            maxBytes: maxUploadBytes,
          });
          onStored(digest);
          return await reply.code(result.created ? 201 : 200).send(result);
        } catch (error) {
          reply.header('connection', 'close');
          throw error;
        }
      },
    );
    done();
  });
}
