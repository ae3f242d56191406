import { type IncomingMessage, type Server, createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import type { RequestListener } from 'node:http';

/** Serves a request listener (an express app, a fake third-party API) on an ephemeral loopback port. */
export async function serveOnLoopback(
  handler: RequestListener,
): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The first port of the range the kernel hands out to sockets bound to port 0 and to outgoing connections.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 2048 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A port on which nothing listens, for a server that must know its own address before it starts (a redirect URI
 * registered with an identity provider first). It is drawn at random from below the kernel's ephemeral range and
 * checked free: a port the kernel handed out could be taken again, between this answer and the server's listen,
 * by any other process's outgoing connection (the tests run in parallel and connect a lot); one below the range
 * only by a process choosing it as this does.
 */
export async function unusedPort(): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = Math.max(1024, high - 10_000);
  for (let attempt = 0; ; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    const free = await new Promise<boolean>((resolve) => {
      const probe = createNetServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
    if (attempt === 50) throw new Error(`no free port found in ${low}–${high}`);
  }
}

/**
 * The JSON body of a request to a fake third-party API: undefined when empty, else what `malformed` makes of text
 * that is not JSON (each fake answers that as its real counterpart does).
 */
export async function readJsonBody(req: IncomingMessage, malformed: (text: string) => unknown): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return malformed(text);
  }
}
