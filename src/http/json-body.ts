import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { refuseNulInBody } from './nul-text.js';

/** The media types read as JSON: `application/json` and the `+json` family (SCIM's, merge patches…). */
const JSON_TYPES = ['application/json', 'application/*+json'];

/** `application/json`, bare or with a UTF-8 charset: what nearly every client sends. */
const PLAIN_JSON = /^application\/json[ \t]*(?:;[ \t]*charset=(?:utf-8|"utf-8")[ \t]*)?$/i;
const DIGITS = /^\d+$/;

/** Whether the request says its body is plain `application/json` (in UTF-8, if it names a charset). */
export function isPlainJson(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return type !== undefined && PLAIN_JSON.test(type);
}

/** A body-parser error of the kind `toAppError` renders (`type` names which). */
const bodyError = (cause: string | Error, status: number, type: string) =>
  Object.assign(typeof cause === 'string' ? new Error(cause) : cause, {
    status,
    statusCode: status,
    expose: true,
    type,
  });

/**
 * The JSON body parser of every listener: express's (body-parser) with a lane of its own for the requests nearly
 * every client sends, `application/json` in UTF-8, uncompressed, of a declared length within the limit. body-parser
 * parses the media type twice, looks the charset up in iconv-lite, reads through raw-body and decodes through
 * iconv-lite on every request; this lane reads the bytes, checks them for NUL and parses them, with body-parser's
 * rules and errors: a byte-order mark is dropped, an empty body is `{}`, anything but an object or an array is
 * malformed (`entity.parse.failed`), a NUL is refused (`entity.nul`), a request cut off is `request.aborted`.
 * Every other body (another charset, `+json`, compressed, chunked, or longer than the limit) goes to body-parser.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const refuseNul = refuseNulInBody('json');
  const general = express.json({ limit: limitBytes, type: JSON_TYPES, verify: refuseNul });
  return (req, res, next) => {
    const { headers } = req;
    const length = headers['content-length'];
    if (
      length === undefined ||
      headers['content-encoding'] !== undefined ||
      headers['transfer-encoding'] !== undefined ||
      !isPlainJson(req) ||
      !DIGITS.test(length) ||
      Number(length) > limitBytes ||
      req.readableEnded
    ) {
      general(req, res, next);
      return;
    }
    readBody(req, Number(length), (error, raw) => {
      if (error) {
        next(error);
        return;
      }
      try {
        refuseNul(req, res, raw!);
        req.body = parseJson(raw!);
      } catch (thrown) {
        next(thrown);
        return;
      }
      next();
    });
  };
}

/** Reads a body of a declared length; the HTTP parser delivers no more than that, and `end` only once it came. */
function readBody(req: IncomingMessage, length: number, done: (error: Error | null, raw?: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const settle = (error: Error | null, raw?: Buffer) => {
    if (settled) return;
    settled = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('aborted', onAborted);
    req.off('error', onError);
    done(error, raw);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (received !== length)
      settle(bodyError('request size did not match content length', 400, 'request.size.invalid'));
    else settle(null, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
  };
  const onAborted = () => settle(bodyError('request aborted', 400, 'request.aborted'));
  const onError = (error: Error) => settle(bodyError(error, 400, 'request.aborted'));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('aborted', onAborted);
  req.on('error', onError);
}

/** body-parser's strict JSON: a byte-order mark dropped, empty is `{}`, only an object or an array at the top. */
function parseJson(raw: Buffer): unknown {
  let text = raw.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  const first = /^[ \t\n\r]*([^ \t\n\r])/.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw bodyError('JSON must be an object or an array', 400, 'entity.parse.failed');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw bodyError(error instanceof Error ? error : String(error), 400, 'entity.parse.failed');
  }
}
