import { request } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAppError } from '../../src/errors.js';
import { jsonBody } from '../../src/http/json-body.js';
import { refuseNulInBody } from '../../src/http/nul-text.js';
import { serveOnLoopback } from '../helpers/http.js';

/**
 * The listeners' JSON body reader against body-parser itself (`express.json` with the same options): every body
 * below is sent to both, byte for byte, and must come out the same, parsed or refused with the same status and code.
 */

const LIMIT = 1024;

function appWith(parser: RequestHandler): express.Express {
  const app = express();
  app.use(parser);
  app.post('/echo', (req, res) => {
    res.json({ body: req.body as unknown });
  });
  const render: ErrorRequestHandler = (err, _req, res, _next) => {
    const error = toAppError(err);
    res.status(error.status).json({ status: error.status, code: error.code });
  };
  app.use(render);
  return app;
}

interface Answer {
  status: number;
  body: unknown;
}

function send(url: string, headers: Record<string, string>, body: Buffer | string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/echo`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

let ours: { url: string; close: () => Promise<void> };
let theirs: { url: string; close: () => Promise<void> };
beforeAll(async () => {
  ours = await serveOnLoopback(appWith(jsonBody(LIMIT)));
  theirs = await serveOnLoopback(
    appWith(
      express.json({ limit: LIMIT, type: ['application/json', 'application/*+json'], verify: refuseNulInBody('json') }),
    ),
  );
});
afterAll(async () => {
  await ours.close();
  await theirs.close();
});

const JSON_TYPE = { 'Content-Type': 'application/json' };
const bom = Buffer.from([0xef, 0xbb, 0xbf]);

const cases: [string, Record<string, string>, Buffer | string][] = [
  ['an object', JSON_TYPE, '{"a":1,"b":[true,null],"c":"ü"}'],
  ['an array', JSON_TYPE, '[1,2,3]'],
  ['an empty body', JSON_TYPE, ''],
  ['whitespace only', JSON_TYPE, ' \n\t '],
  ['leading whitespace', JSON_TYPE, '\r\n  {"a":1}'],
  ['a byte-order mark', JSON_TYPE, Buffer.concat([bom, Buffer.from('{"a":1}')])],
  ['a bare number', JSON_TYPE, '42'],
  ['a bare string', JSON_TYPE, '"text"'],
  ['null', JSON_TYPE, 'null'],
  ['malformed JSON', JSON_TYPE, '{"a":'],
  ['trailing garbage', JSON_TYPE, '{"a":1} x'],
  ['an escaped NUL', JSON_TYPE, '{"a":"x\\u0000y"}'],
  ['an escaped backslash before u0000', JSON_TYPE, '{"a":"x\\\\u0000y"}'],
  ['bytes that are not UTF-8', JSON_TYPE, Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ['a UTF-8 charset', { 'Content-Type': 'application/json; charset=utf-8' }, '{"a":1}'],
  ['a quoted charset, in capitals', { 'Content-Type': 'Application/JSON;charset="UTF-8"' }, '{"a":1}'],
  ['a Latin-1 charset', { 'Content-Type': 'application/json; charset=latin1' }, '{"a":1}'],
  ['a UTF-16 charset', { 'Content-Type': 'application/json; charset=utf-16' }, '{"a":1}'],
  ['a +json type', { 'Content-Type': 'application/scim+json' }, '{"a":1}'],
  ['another type', { 'Content-Type': 'text/plain' }, '{"a":1}'],
  ['a body over the limit', JSON_TYPE, `{"a":"${'x'.repeat(LIMIT)}"}`],
  ['a body at the limit', JSON_TYPE, `{"a":"${'x'.repeat(LIMIT - 8)}"}`],
  ['a gzipped body', { ...JSON_TYPE, 'Content-Encoding': 'gzip' }, gzipSync('{"a":1}')],
  ['an unknown encoding', { ...JSON_TYPE, 'Content-Encoding': 'zip' }, '{"a":1}'],
  ['a chunked body', { ...JSON_TYPE, 'Transfer-Encoding': 'chunked' }, '{"a":1}'],
];

describe('the JSON body reader', () => {
  it.each(cases)('reads %s as body-parser does', async (_name, headers, body) => {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const withLength = headers['Transfer-Encoding'] ? headers : { ...headers, 'Content-Length': String(bytes.length) };
    const [mine, reference] = await Promise.all([
      send(ours.url, withLength, bytes),
      send(theirs.url, withLength, bytes),
    ]);
    expect(mine).toEqual(reference);
  });

  it('answers a body refused or parsed with the codes the service renders', async () => {
    const post = (body: string) =>
      send(ours.url, { ...JSON_TYPE, 'Content-Length': String(Buffer.byteLength(body)) }, body);
    expect(await post('{"a":')).toEqual({ status: 400, body: { status: 400, code: 'MALFORMED_JSON' } });
    expect(await post('7')).toEqual({ status: 400, body: { status: 400, code: 'MALFORMED_JSON' } });
    expect((await post('{"a":"\\u0000"}')).status).toBe(400);
    expect(await post('{"a":[1]}')).toEqual({ status: 200, body: { body: { a: [1] } } });
  });

  it('lets a client leave half-way through its body, and answers the next request', async () => {
    const { port } = new URL(ours.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    let answered = '';
    socket.on('data', (chunk: Buffer) => (answered += chunk.toString()));
    socket.write(
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    socket.destroy();
    expect(answered).toBe('');
    expect(await send(ours.url, { ...JSON_TYPE, 'Content-Length': '7' }, '{"a":1}')).toEqual({
      status: 200,
      body: { body: { a: 1 } },
    });
  });
});
