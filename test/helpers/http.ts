import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** A port on which nothing listens (bound, then released). */
export async function unusedPort(): Promise<number> {
  const { server, close } = await serveOnLoopback(() => undefined);
  const { port } = server.address() as AddressInfo;
  await close();
  return port;
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
