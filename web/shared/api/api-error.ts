/**
 * An HTTP failure with the message the server gave, whichever body shape it used:
 * `{error, message, code?, retry_after?}` (auth, credentials, playground), `{detail: string | [{msg}]}`
 * (data-subject, validation) or `{error: {code, message}}` (MCP).
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
    /** Seconds to wait before trying again (429 only). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** A failure that never reached the server or never came back (offline, DNS, aborted proxy). */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function detailText(detail: unknown): string | undefined {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    const parts = detail
      .map((item) => {
        if (!isRecord(item)) return typeof item === 'string' ? item : undefined;
        const where = Array.isArray(item.loc) ? item.loc.filter((p) => p !== 'body').join('.') : '';
        const msg = typeof item.msg === 'string' ? item.msg : undefined;
        return msg && where ? `${where}: ${msg}` : msg;
      })
      .filter((p): p is string => Boolean(p));
    return parts.length > 0 ? parts.join('; ') : undefined;
  }
  return undefined;
}

function fallbackMessage(status: number): string {
  if (status === 401) return 'Your sign-in is no longer valid. Sign in again.';
  if (status === 403) return 'You do not have permission to do that.';
  if (status === 404) return 'Not found. It may have been deleted.';
  if (status === 429) return 'Too many requests. Wait a moment and try again.';
  if (status >= 500) return `The service had a problem (HTTP ${status}). Try again shortly.`;
  return `Request failed (HTTP ${status}).`;
}

function parseRetryAfter(header: string | null, body: unknown): number | undefined {
  if (isRecord(body) && typeof body.retry_after === 'number' && body.retry_after >= 0) return body.retry_after;
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** Builds an ApiError from a failed response, reading its body once. */
export async function apiErrorFrom(response: Response): Promise<ApiError> {
  let body: unknown;
  const text = await response.text().catch(() => '');
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }

  let message: string | undefined;
  let code: string | undefined;
  if (isRecord(body)) {
    if (typeof body.message === 'string' && body.message) message = body.message;
    message ??= detailText(body.detail);
    if (isRecord(body.error)) {
      if (typeof body.error.message === 'string') message ??= body.error.message;
      if (typeof body.error.code === 'string' || typeof body.error.code === 'number') code = String(body.error.code);
    } else if (typeof body.error === 'string') {
      message ??= body.error.replaceAll('_', ' ');
    }
    if (typeof body.code === 'string') code = body.code;
  }

  const retryAfter = response.status === 429 ? parseRetryAfter(response.headers.get('Retry-After'), body) : undefined;
  if (response.status === 429) {
    const wait = retryAfter !== undefined ? `Wait ${retryAfter} s and try again.` : 'Wait a moment and try again.';
    message = message ? `${message.replace(/\.?$/, '.')} ${wait}` : `Too many attempts. ${wait}`;
  }

  return new ApiError(message ?? fallbackMessage(response.status), response.status, code, retryAfter);
}

/** A sentence for the person looking at the screen, whatever was thrown. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError || error instanceof NetworkError) return error.message;
  if (error instanceof Error && error.name === 'AbortError') return 'Cancelled.';
  if (error instanceof Error && error.message) return error.message;
  return 'Something went wrong.';
}
