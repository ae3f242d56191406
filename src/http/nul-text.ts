import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { BadRequestError, CommonErrorCode, NUL_MESSAGE } from '../errors.js';

/**
 * PostgreSQL cannot store the NUL character (U+0000) in text, and no field of this service needs it: a request
 * whose path, query or body holds one is refused at the door with 400, on every database alike, before any of it
 * is acted on.
 */
export function nulRefused(): BadRequestError {
  return new BadRequestError(NUL_MESSAGE, { code: CommonErrorCode.BadRequest });
}

const BACKSLASH = 0x5c;

/** Whether JSON text holds an escaped NUL: `\u0000` as an escape, not an escaped backslash followed by "u0000". */
export function jsonHoldsNul(raw: Buffer): boolean {
  for (let at = raw.indexOf('u0000'); at !== -1; at = raw.indexOf('u0000', at + 5)) {
    let backslashes = 0;
    for (let i = at - 1; i >= 0 && raw[i] === BACKSLASH; i--) backslashes++;
    if (backslashes % 2 === 1) return true;
  }
  return false;
}

/** Whether a URL or form-encoded text holds a percent-encoded NUL. */
const holdsEncodedNul = (text: string | Buffer) => text.indexOf('%00') !== -1;

/** Refuses a request whose path or query holds a NUL. */
export function refuseNulInUrl(): RequestHandler {
  return (req, _res, next) => next(holdsEncodedNul(req.url) ? nulRefused() : undefined);
}

/**
 * The body parsers' `verify`: refuses a JSON or form body holding a NUL before it is parsed. The parser wraps what
 * `verify` throws in an HTTP error of its own, so it throws a plain error of the parser's kind (`type`
 * `entity.nul`), which `toAppError` renders as `nulRefused()`'s 400.
 */
export function refuseNulInBody(kind: 'json' | 'form') {
  return (_req: IncomingMessage, _res: unknown, raw: Buffer): void => {
    if (kind === 'json' ? jsonHoldsNul(raw) : holdsEncodedNul(raw))
      throw Object.assign(new Error(NUL_MESSAGE), { status: 400, type: 'entity.nul' });
  };
}
