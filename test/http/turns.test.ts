import { type IncomingMessage, type RequestListener, type Server, createServer } from 'node:http';
import { type AddressInfo, type Socket, connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { arrivalOf, boundedTurns } from '../../src/http/turns.js';

/**
 * Request handling bounded per turn of the event loop, so that a saturated server still accepts the connections
 * waiting for it every few milliseconds (libuv accepts one per turn) instead of after every open connection's
 * request has been served once more.
 */

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function serve(listener: RequestListener): Promise<{ server: Server; port: number }> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Work that holds the event loop, as a request's JSON, validation and database work do. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

const REQUEST = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/**
 * Keep-alive clients that all connect at once and send their next request as soon as an answer arrives, until the
 * server has answered `total` requests. Answers how many requests had been answered when the server accepted the
 * last of their connections.
 */
async function answeredBeforeLastAccepted(clients: number, total: number, perRequestMs: number): Promise<number> {
  let answered = 0;
  const acceptedAt: number[] = [];
  const { server, port } = await serve(
    boundedTurns((_req, res) => {
      busy(perRequestMs);
      answered += 1;
      res.end('ok');
    }),
  );
  server.on('connection', () => acceptedAt.push(answered));
  await new Promise<void>((resolve) => {
    for (let i = 0; i < clients; i++) {
      const socket = connect(port, '127.0.0.1', () => socket.write(REQUEST));
      sockets.push(socket);
      socket.on('data', () => {
        if (answered >= total) resolve();
        else socket.write(REQUEST);
      });
    }
  });
  expect(acceptedAt).toHaveLength(clients);
  return acceptedAt.at(-1)!;
}

describe('bounded turns', () => {
  it('lets clients that connect together to a saturated server in within a few requests of each other', async () => {
    // Unbounded, every turn answers each connection accepted so far once more before the next is accepted: the
    // last of 24 is let in after well over a hundred answers. Bounded, after about two per connection before it.
    const answered = await answeredBeforeLastAccepted(24, 200, 3);
    expect(answered).toBeLessThan(70);
  });

  it('runs a request at once when the server is not saturated', async () => {
    const seen: (number | undefined)[] = [];
    const { port } = await serve(
      boundedTurns((req: IncomingMessage, res) => {
        seen.push(arrivalOf(req));
        res.end('ok');
      }),
    );
    for (let i = 0; i < 3; i++) expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('ok');
    expect(seen).toEqual([undefined, undefined, undefined]);
  });

  it('runs the requests that had to wait in the order they arrived, in later turns', async () => {
    const ran: number[] = [];
    const listener = boundedTurns((req) => {
      busy(3);
      ran.push(Number(req.url));
    }, 2);
    const requests = [...Array(6).keys()].map((i) => ({ url: String(i) }) as IncomingMessage);
    // Arriving together, as from one read of the sockets: the first spends the turn's budget, the rest wait.
    for (const req of requests) listener(req, {} as never);
    expect(ran).toEqual([0]);
    expect(arrivalOf(requests[0]!)).toBeUndefined();
    expect(requests.slice(1).every((req) => typeof arrivalOf(req) === 'number')).toBe(true);
    await expect.poll(() => ran).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
