import { type Server, createServer } from 'node:http';
import type { App } from '../../src/app.js';
import { createCallerResolver } from '../../src/http/authenticate.js';
import { WebSocketEndpoint, type WebSocketDeps } from '../../transports/websocket.js';

/**
 * A WebSocket endpoint over the app's own MCP core on a server of its own, for settings the app does not expose
 * (a short auth timeout, a lifecycle that is not running). Close the returned server when done.
 */
export async function standaloneEndpoint(
  app: App,
  deps: Partial<WebSocketDeps>,
): Promise<{ url: string; server: Server }> {
  const endpoint = new WebSocketEndpoint({
    core: app.services.mcp.core,
    lifecycle: app.lifecycle,
    logger: app.logger,
    resolveCaller: createCallerResolver({
      bearer: (token) => app.services.auth.auth.authenticateBearer(token),
      sessionCookie: (credential) => app.services.auth.auth.authenticateSession(credential),
    }),
    originAllowed: () => true,
    maxPayloadBytes: 1_000_000,
    ...deps,
  });
  const server = createServer();
  server.on('upgrade', (req, socket, head) => {
    if (!endpoint.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, server };
}
