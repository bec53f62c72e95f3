// Errors in the shape OpenAI's API (and vLLM's, and so every OpenAI client) uses:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "max_tokens", "code": null}}
// Both the gateway (its own refusals: auth, limits, unknown model) and the worker (request
// validation, engine refusals) answer OpenAI routes with it.

export type OpenAiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'service_unavailable_error';

export interface OpenAiErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: OpenAiErrorType;
    readonly param: string | null;
    readonly code: string | null;
  };
}

export interface OpenAiError {
  readonly status: number;
  readonly body: OpenAiErrorBody;
}

/** The type OpenAI uses for an HTTP status. */
export function openAiErrorType(status: number): OpenAiErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'service_unavailable_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export function openAiError(
  status: number,
  message: string,
  options: {
    readonly param?: string | null;
    readonly code?: string | null;
    readonly type?: OpenAiErrorType;
  } = {},
): OpenAiError {
  return {
    status,
    body: {
      error: {
        message,
        type: options.type ?? openAiErrorType(status),
        param: options.param ?? null,
        code: options.code ?? null,
      },
    },
  };
}
