import { type Server, type Socket, connect, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

export type ProxyMode = 'open' | 'refuse' | 'blackhole';

/**
 * A TCP proxy in front of a real service (Redis, PostgreSQL), to take it away from the app under test without
 * stopping it for everyone else: `refuse` drops every connection at once (a crashed or stopped server), `blackhole`
 * accepts and never answers (a hung one), `open` passes traffic again.
 */
export interface TcpProxy {
  port: number;
  /** Connections the proxy has accepted so far, whatever their fate. */
  readonly accepted: number;
  set(mode: ProxyMode): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: ProxyMode = 'open';
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (mode === 'refuse') return void client.destroy();
    if (mode === 'blackhole') return;
    const upstream = connect(target.port, target.host);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get accepted() {
      return accepted;
    },
    set(next) {
      mode = next;
      // A mode change ends what was open, as a server going away (or coming back) would.
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
