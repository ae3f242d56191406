import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Provider } from 'oidc-provider';

/** A real OpenID Connect provider (oidc-provider) on a loopback port, with one confidential client. */
export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close: () => Promise<void>;
}

export async function startTestIdp(redirectUri = 'http://127.0.0.1:8000/auth/sso/callback'): Promise<TestIdp> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;
  const client = { client_id: 'agent-service', client_secret: 'idp-test-secret', redirect_uris: [redirectUri] };
  const provider = new Provider(issuer, { clients: [client], pkce: { required: () => true } });
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));
  return {
    issuer,
    clientId: client.client_id,
    clientSecret: client.client_secret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
