import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { nodeArgsFor } from '../helpers/entry.js';
import { unusedPort } from '../helpers/http.js';
import { MemoryOAuthClient, answerConsentAt, openAuthorization } from '../helpers/oauth.js';

/**
 * A client identified by the URL of its metadata document (Client ID Metadata Documents), with the official SDK
 * client: no registration; the service fetches the document over https from the client's host. The service runs
 * as its own process, trusting the test's certificate authority (NODE_EXTRA_CA_CERTS) as a machine trusts an
 * internal one, and allowed to fetch from `localhost` (MCP_CLIENT_METADATA_PRIVATE_HOSTS).
 */
const MAIN = join(import.meta.dirname, '../../src/main.ts');
const dir = mkdtempSync(join(tmpdir(), 'cimd-'));
let service: ChildProcess;
let base: string;
let documents: Server;
let documentBase: string;
const served = new Map<string, unknown>();
const fetched: string[] = [];

function certificate(): { key: string; cert: string; file: string } {
  const key = join(dir, 'key.pem');
  const file = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      file,
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(file, 'utf8'), file };
}

beforeAll(async () => {
  const tls = certificate();
  documents = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    fetched.push(req.url ?? '');
    const body = served.get(req.url ?? '');
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
  documentBase = `https://localhost:${(documents.address() as AddressInfo).port}`;

  const port = await unusedPort();
  base = `http://127.0.0.1:${port}`;
  service = spawn(process.execPath, [...nodeArgsFor(MAIN), 'serve'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      PLAYGROUND_PORT: '0',
      BUILDER_PORT: '0',
      DATABASE_URL: `sqlite:${join(dir, 'agent.db')}`,
      ADMIN_PASSWORD,
      LOG_LEVEL: 'warn',
      NODE_EXTRA_CA_CERTS: tls.file,
      MCP_CLIENT_METADATA_PRIVATE_HOSTS: 'localhost',
    },
    stdio: 'ignore',
  });
  for (let i = 0; i < 200; i++) {
    const ready = await fetch(`${base}/health/ready`).catch(() => undefined);
    if (ready?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the service did not become ready');
}, 60_000);

afterAll(async () => {
  service?.kill('SIGTERM');
  await new Promise<void>((resolve) => documents?.close(() => resolve()));
});

/** A client whose id is the URL of its metadata document. */
class DocumentedClient extends MemoryOAuthClient {
  constructor(readonly clientMetadataUrl: string) {
    super('http://127.0.0.1:40114/callback');
  }
}

describe('Client ID Metadata Documents', () => {
  it('the SDK client signs in with a URL client id, without registering', async () => {
    const id = `${documentBase}/ide/client.json`;
    served.set('/ide/client.json', {
      client_id: id,
      client_name: 'Documented IDE',
      redirect_uris: ['http://127.0.0.1:40114/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(metadata.client_id_metadata_document_supported).toBe(true);

    const provider = new DocumentedClient(id);
    const mcp = new URL(`${base}/mcp`);
    const first = new Client({ name: 'documented', version: '1.0.0' });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcp, { authProvider: provider })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client?.client_id).toBe(id);
    expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(id);

    const page = await openAuthorization(provider.authorizationUrl!);
    expect(page.html).toContain('Allow Documented IDE to use Agent Service?');
    const answer = await answerConsentAt(base, page, {
      decision: 'approve',
      username: 'admin',
      password: ADMIN_PASSWORD,
    });
    expect(answer.status).toBe(303);
    await new StreamableHTTPClientTransport(mcp, { authProvider: provider }).finishAuth(
      answer.location!.searchParams.get('code')!,
    );
    const client = new Client({ name: 'documented', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcp, { authProvider: provider }));
    expect((await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } })).isError).toBe(false);
    await client.close();
    expect(fetched).toContain('/ide/client.json');
  });

  it('refuses documents that do not name themselves, carry a secret, or list a redirect their type may not use', async () => {
    const cases: Record<string, (id: string) => Record<string, unknown>> = {
      '/bad/other-id.json': () => ({
        client_id: `${documentBase}/elsewhere.json`,
        redirect_uris: ['http://127.0.0.1:1/cb'],
      }),
      '/bad/secret.json': (id) => ({ client_id: id, client_secret: 's', redirect_uris: ['http://127.0.0.1:1/cb'] }),
      '/bad/redirect.json': (id) => ({ client_id: id, redirect_uris: ['http://evil.example/cb'] }),
      // A web application may not redirect to loopback (application_type, as in dynamic registration).
      '/bad/web-loopback.json': (id) => ({
        client_id: id,
        application_type: 'web',
        redirect_uris: ['http://127.0.0.1:1/cb'],
      }),
    };
    for (const [path, document] of Object.entries(cases)) {
      const id = `${documentBase}${path}`;
      served.set(path, document(id));
      const url = new URL(`${base}/oauth/authorize`);
      for (const [key, value] of Object.entries({
        response_type: 'code',
        client_id: id,
        redirect_uri: 'http://127.0.0.1:1/cb',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
      }))
        url.searchParams.set(key, value);
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as { error: string }).error, path).toBe('invalid_client');
    }
  });

  it('does not fetch documents from private addresses that are not allowed', async () => {
    // The same server, valid for this name too, but reached by an address nobody allowed.
    const id = `${documentBase.replace('localhost', '127.0.0.1')}/private/client.json`;
    served.set('/private/client.json', { client_id: id, redirect_uris: ['http://127.0.0.1:1/cb'] });
    const url = new URL(`${base}/oauth/authorize`);
    url.searchParams.set('client_id', id);
    url.searchParams.set('response_type', 'code');
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_client');
    expect(fetched).not.toContain('/private/client.json');
  });
});
