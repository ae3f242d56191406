import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, InsufficientScopeError, ResourceNotFoundError } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { CACHE_HINTS } from '../../src/mcp/modern.js';
import { linear } from '../builder/helpers.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, accessToken, createUser } from '../helpers/auth.js';
import { authorizeClient } from '../helpers/oauth.js';
import { startTestClient } from '../helpers/client.js';
import { nodeArgsFor } from '../helpers/entry.js';
import { connectModernClient } from '../helpers/mcp.js';

/**
 * The 2026-07-28 revision on `/mcp`, beside the 2025-era protocol on the same endpoint: the official 2.x client,
 * pinned to the revision or negotiating (`auto`), against the service; and a 1.x client on the same URL.
 */
const closing = closeAfterEach();
const REVISION = '2026-07-28';

const modernClient = async (app: App, token: string, mode: 'auto' | { pin: string } = { pin: REVISION }) =>
  closing(await connectModernClient(app, token, { mode }));

describe('MCP 2026-07-28 beside the 2025 era on /mcp', () => {
  let app: App;
  let token: string;
  beforeAll(async () => {
    app = await startTestApp();
    await createUser(app, 'alice');
    token = await accessToken(app, 'alice');
  });
  afterAll(() => app.close());

  it('negotiates the revision, pinned or by discovery, and says who it is', async () => {
    for (const mode of [{ pin: REVISION }, 'auto'] as const) {
      const client = await modernClient(app, token, mode);
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe(REVISION);
      expect(client.getServerVersion()).toMatchObject({ name: 'agent-service', title: 'Agent Service' });
      expect(client.getDiscoverResult()).toMatchObject({
        supportedVersions: expect.arrayContaining([REVISION]) as unknown,
        capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
      });
    }
  });

  it('lists the caller’s tools with a private cache hint, and calls one through the policy point', async () => {
    const client = await modernClient(app, token);
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['chat', 'agent_chat', 'conversation_search', 'search_web']),
    );
    // The list depends on the caller's permissions: only the caller may reuse it.
    expect(listed).toMatchObject({ ttlMs: CACHE_HINTS['tools/list'].ttlMs, cacheScope: 'private' });

    const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'nothing yet' } });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ matches: [] });

    const invalid = await client.callTool({ name: 'conversation_search', arguments: { query: 42 } });
    expect(invalid.isError).toBe(true);
  });

  it('reads resources and prompts from the same catalog as the 2025 era', async () => {
    const client = await modernClient(app, token);
    const resources = await client.listResources();
    expect(resources.resources.map((r) => r.uri)).toContain('agent-service://server');
    expect(resources).toMatchObject({ cacheScope: 'private' });
    const read = await client.readResource({ uri: 'agent-service://server' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ name: 'agent-service' });
    const missing = await client.readResource({ uri: 'conversation://no-such-conversation' }).catch((e: unknown) => e);
    // The revision reports a resource that does not exist (or is not the caller's) as invalid params.
    expect(missing).toBeInstanceOf(ResourceNotFoundError);
    expect(missing).toMatchObject({ code: -32602, uri: 'conversation://no-such-conversation' });

    const prompts = await client.listPrompts();
    expect(prompts.prompts.map((p) => p.name).sort()).toEqual(['research_topic', 'summarize_conversation']);
    expect(prompts).toMatchObject({ ttlMs: CACHE_HINTS['prompts/list'].ttlMs, cacheScope: 'public' });
    const prompt = await client.getPrompt({ name: 'research_topic', arguments: { topic: 'MCP', depth: 'thorough' } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: expect.stringContaining('Research "MCP"') as unknown });
    const wrong = await client
      .getPrompt({ name: 'summarize_conversation', arguments: { conversation_id: 'nope' } })
      .catch((e: unknown) => e);
    expect(wrong).toMatchObject({ code: -32602 });

    // The revision answers errors with HTTP 200: the metrics read the JSON-RPC outcome.
    const metrics = await (await fetch(`${app.url('main')}/metrics`)).text();
    expect(metrics).toMatch(/mcp_messages_total\{method="prompts\/get",status="error"\} 1\n/);
    expect(metrics).toMatch(/mcp_messages_total\{method="prompts\/get",status="success"\} 1\n/);
    expect(metrics).toMatch(/mcp_messages_total\{method="resources\/read",status="error"\} 1\n/);
  });

  it('serves a 2025-era client on the same URL, unchanged', async () => {
    const client = closing(new LegacyClient({ name: 'legacy', version: '1.0.0' }));
    const transport = new LegacyTransport(new URL(`${app.url('main')}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    expect(client.getServerVersion()?.name).toBe('agent-service');
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } })).isError).toBe(false);
  });

  it('refuses a request whose Mcp-Name header disagrees with its body', async () => {
    const call = (name: string) =>
      fetch(`${app.url('main')}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Protocol-Version': REVISION,
          'Mcp-Method': 'tools/call',
          'Mcp-Name': name,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'conversation_search',
            arguments: { query: 'x' },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': REVISION,
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
    const agreed = await call('conversation_search');
    expect(agreed.status).toBe(200);
    expect(await agreed.json()).toMatchObject({ result: { isError: false } });
    const mismatched = await call('search_web');
    const body = (await mismatched.json()) as { error?: { code: number } };
    expect(body.error?.code).toBe(-32020);
  });

  it('asks a token narrowed to reading to step up before a tool that changes data (403 insufficient_scope)', async () => {
    const { tokens } = await authorizeClient(app, 'alice', PASSWORD, undefined, 'mcp:read');
    expect(tokens.scope).toBe('mcp:read');
    const client = await modernClient(app, tokens.access_token as string);
    const read = await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } });
    expect(read.isError).toBe(false);
    const refused = await client.callTool({ name: 'chat', arguments: { query: 'hi' } }).catch((e: unknown) => e);
    // The client read the 403's WWW-Authenticate challenge: which scopes to ask for, and where the metadata is.
    expect(refused).toBeInstanceOf(InsufficientScopeError);
    expect(refused).toMatchObject({
      requiredScope: 'mcp:read mcp:tools',
      errorDescription: 'calling chat needs the mcp:tools scope',
      resourceMetadataUrl: new URL(`${app.config.publicUrl}/.well-known/oauth-protected-resource/mcp`),
    });
  });

  it('refuses a modern request without credentials, as every MCP wire does', async () => {
    const res = await fetch(`${app.url('main')}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Protocol-Version': REVISION,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': REVISION } },
      }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata=');
  });

  it('tells a subscribed client when the tools on offer change', async () => {
    const { app: served, as } = closing(await startTestClient());
    const alice = await as('alice');
    const client = await modernClient(served, alice.token);
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
    );
    const subscription = await client.listen({ toolsListChanged: true });

    const created = await alice.at('builder').post('/api/builder/workflows', linear('Say hello'));
    const published = await alice
      .at('builder')
      .post(`/api/builder/workflows/${created.body.workflow_id as string}/publish`);
    expect(published.status).toBe(200);
    await changed;
    expect((await client.listTools()).tools.map((t) => t.name)).toContain(published.body.tool_name);
    await subscription.close();
  });

  it('tells a client following a conversation it may read when it gets messages; another user may not follow it', async () => {
    const { app: served, as } = closing(await startTestClient());
    const alice = await as('alice');
    const bob = await as('bob');
    const client = await modernClient(served, alice.token);
    const first = await client.callTool({ name: 'chat', arguments: { query: 'Hello there' } });
    const uri = `conversation://${(first.structuredContent as { conversation_id: string }).conversation_id}`;

    const listener = await modernClient(served, alice.token);
    const updated = new Promise<string>((resolve) =>
      listener.setNotificationHandler('notifications/resources/updated', (note) => resolve(note.params.uri)),
    );
    const subscription = await listener.listen({ resourceSubscriptions: [uri] });
    await client.callTool({
      name: 'chat',
      arguments: { query: 'And again', conversation_id: uri.slice('conversation://'.length) },
    });
    expect(await updated).toBe(uri);
    await subscription.close();

    const intruder = await modernClient(served, bob.token);
    const refused = await intruder.listen({ resourceSubscriptions: [uri] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32602, message: expect.stringContaining(uri) as unknown });
    // Unknown schemes, and more than 100 resources at once, are refused the same way.
    for (const uris of [['file:///etc/passwd'], Array.from({ length: 101 }, () => 'agent-service://server')]) {
      const tooMuch = await listener.listen({ resourceSubscriptions: uris }).catch((e: unknown) => e);
      expect(tooMuch).toMatchObject({ code: -32602 });
    }
  });

  it('over stdio, a negotiating client falls back to the 2025 era and is served', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-stdio-')), 'agent.db');
    const client = closing(new Client({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } }));
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [...nodeArgsFor(join(import.meta.dirname, '../../src/main.ts')), 'stdio'],
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: `sqlite:${dbFile}`, ADMIN_PASSWORD, LOG_LEVEL: 'silent' },
      }),
    );
    expect(client.getProtocolEra()).toBe('legacy');
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect((await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } })).isError).toBe(false);
  }, 60_000);
});
