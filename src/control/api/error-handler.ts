// Renders every failure of the control-plane API as `{"error": {"code", "message", …}}` from
// the one error registry, whatever raised it: our own KilnErrors, Fastify's body/validation
// errors, or a bug (500, logged, no internals leaked).

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { kilnError, KilnError } from '../../core/errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The registry code of the error this request was answered with (for the audit log). */
    errorCode: string | null;
  }
}

function fromFastify(
  error: FastifyError,
  request: FastifyRequest,
  maxBodyBytes: number,
): KilnError | null {
  if (error.validation !== undefined) {
    const first = error.validation[0];
    const where = error.validationContext ?? 'body';
    const path =
      first?.instancePath === undefined || first.instancePath === ''
        ? where
        : `${where}${first.instancePath}`;
    const reason =
      first === undefined
        ? error.message
        : first.keyword === 'additionalProperties'
          ? `${path} has unknown property ${JSON.stringify((first.params as { additionalProperty?: string }).additionalProperty)}`
          : `${path} ${first.message ?? 'is invalid'}`;
    // The field in the body's own terms (`config.llm.blockSize`), as deploy's checks name it.
    const pointer = first?.instancePath ?? '';
    const extra =
      first?.keyword === 'additionalProperties'
        ? `/${(first.params as { additionalProperty?: string }).additionalProperty ?? ''}`
        : '';
    const field = `${pointer}${extra}`
      .split('/')
      .filter((part) => part !== '')
      .join('.');
    return kilnError(
      'KILN_VALIDATION_FAILED',
      { reason },
      { ...(field === '' ? {} : { field }), validation: error.validation },
    );
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return kilnError('KILN_PAYLOAD_TOO_LARGE', {
        size: request.headers['content-length'] ?? 'more than the limit of',
        limit: maxBodyBytes,
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return kilnError('KILN_UNSUPPORTED_MEDIA_TYPE', {
        contentType: request.headers['content-type'] ?? '(none)',
        expected: 'application/json',
      });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return kilnError('KILN_INVALID_JSON', { reason: 'the body is empty' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return kilnError('KILN_VALIDATION_FAILED', {
        reason: 'the body size does not match Content-Length',
      });
    default:
      return null;
  }
}

export function installErrorHandling(app: FastifyInstance, maxBodyBytes: number): void {
  app.decorateRequest('errorCode', null);
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    let kiln: KilnError;
    if (error instanceof KilnError) kiln = error;
    else {
      const mapped = fromFastify(error, request, maxBodyBytes);
      if (mapped !== null) kiln = mapped;
      else if (
        typeof error.statusCode === 'number' &&
        error.statusCode >= 400 &&
        error.statusCode < 500
      ) {
        kiln = kilnError('KILN_VALIDATION_FAILED', { reason: error.message });
      } else {
        request.log.error({ err: error }, 'unhandled error');
        kiln = kilnError('KILN_INTERNAL', { reason: 'unexpected failure; see the server log' });
      }
    }
    request.errorCode = kiln.code;
    if (kiln.status >= 500)
      request.log.warn({ code: kiln.code, message: kiln.message }, 'request failed');
    return reply.code(kiln.status).type('application/json').send(kiln.toJSON());
  });

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const error = kilnError('KILN_ROUTE_NOT_FOUND', {
      method: request.method,
      url: request.url.split('?')[0] ?? '',
    });
    request.errorCode = error.code;
    return reply.code(error.status).send(error.toJSON());
  });
}

/** JSON body parser that says why a body is not JSON (Fastify's default does not). */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim().length === 0) {
      done(kilnError('KILN_INVALID_JSON', { reason: 'the body is empty' }), undefined);
      return;
    }
    try {
      const value: unknown = JSON.parse(text, (key, v: unknown) => {
        if (key === '__proto__' || key === 'constructor') {
          throw new SyntaxError(`the key "${key}" is not allowed`);
        }
        return v;
      });
      done(null, value);
    } catch (error) {
      done(kilnError('KILN_INVALID_JSON', { reason: (error as Error).message }), undefined);
    }
  });
}
