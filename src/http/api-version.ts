import type { RequestHandler } from 'express';
import { BadRequestError, CommonErrorCode } from '../errors.js';
import { API_VERSION, SUPPORTED_API_VERSIONS } from '../version.js';

/** Accepts `v1`, `1` and `1.0` as the same version. */
function normalise(requested: string): string {
  const match = /^v?(\d+)(?:\.0)?$/i.exec(requested.trim());
  return match ? `v${match[1]}` : requested.trim();
}

/**
 * Version negotiation (spec "Versioning" 4): a request may name the API version it wants in `X-API-Version`.
 * Every response says which version answered; an unsupported request is refused before any route runs.
 */
export function apiVersion(): RequestHandler {
  return (req, res, next) => {
    res.setHeader('X-API-Version', API_VERSION);
    const requested = req.get('X-API-Version');
    if (requested === undefined || SUPPORTED_API_VERSIONS.includes(normalise(requested))) {
      next();
      return;
    }
    const shown = requested.length > 32 ? `${requested.slice(0, 32)}…` : requested;
    next(
      new BadRequestError(
        `Unsupported API version "${shown}" in X-API-Version; supported versions: ${SUPPORTED_API_VERSIONS.join(', ')}`,
        { code: CommonErrorCode.UnsupportedApiVersion },
      ),
    );
  };
}
