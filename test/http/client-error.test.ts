import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';

/**
 * What Node's HTTP parser refuses before the service sees a request (headers over 16 KiB, bytes that are not
 * HTTP) is answered in the envelope every other refusal has, on each listener, and the connection is closed; the
 * service goes on serving.
 */

let app: App;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

/** Sends raw bytes to a listener and reads everything until the server closes the connection. */
function exchange(listener: 'main' | 'playground' | 'builder', bytes: string): Promise<string> {
  const { hostname, port } = new URL(app.url(listener));
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

function parse(answer: string): { status: number; headers: string; body: Record<string, unknown> } {
  const [head, body] = answer.split('\r\n\r\n', 2) as [string, string];
  return { status: Number(head.split(' ')[1]), headers: head, body: JSON.parse(body) as Record<string, unknown> };
}

describe('requests the HTTP parser refuses', () => {
  it.each(['main', 'playground', 'builder'] as const)(
    'headers over 16 KiB are a 431 in the envelope on the %s listener',
    async (listener) => {
      const answer = parse(
        await exchange(
          listener,
          `GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`,
        ),
      );
      expect(answer.status).toBe(431);
      expect(answer.headers).toMatch(/content-type: application\/json/i);
      expect(answer.headers).toMatch(/connection: close/i);
      expect(answer.body).toEqual({
        error: 'headers_too_large',
        message: 'The request line and headers are larger than 16 KiB',
        code: 'HEADERS_TOO_LARGE',
        timestamp: expect.any(String) as string,
      });
    },
  );

  it('bytes that are not HTTP are a 400 in the envelope', async () => {
    const answer = parse(await exchange('main', 'NOT HTTP AT ALL\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'BAD_REQUEST', message: 'The request is not well-formed HTTP/1.1' });
  });

  it('a URL over 16 KiB is a 431 too, and the service goes on answering', async () => {
    const answer = parse(
      await exchange('main', `GET /health/live?q=${'b'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
    );
    expect(answer.status).toBe(431);
    expect((await fetch(`${app.url('main')}/health/live`)).status).toBe(200);
  });
});
