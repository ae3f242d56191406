import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_PASSWORD, PASSWORD } from '../helpers/auth.js';
import { launchChromium, probeChromium } from '../helpers/browser.js';
import { type Json, type SignedIn, type TestClient, startTestClient } from '../helpers/client.js';
import { unusedPort } from '../helpers/http.js';
import { describeWithService } from '../helpers/services.js';

/*
 * The service as an OAuth client of an OAuth-protected MCP server, end to end and with nothing faked: a second
 * instance of this service (B) is the upstream, its /mcp guarded by its own authorization server (RFC 9728
 * metadata, RFC 8414, dynamic registration, a consent page, PKCE). The first instance (A) holds alice's connection
 * to B's /mcp; alice connects her account at B in headless Chromium, and A then calls B's tools with her own B
 * token (through the agent, a builder workflow and, for a shared connection, MCP gateway mode), refreshes it when it
 * expires, asks her to connect again once she revoked it at B, and revokes it at B when she disconnects.
 */

/** B's user, whose conversations B's `conversation_search` searches: their text coming back proves whose token it was. */
const B_USER = 'alice.b';
/** A word only B's user wrote, at B. */
const MARKER = 'quetzalcoatl';

describeWithService(
  'connections to an OAuth-protected MCP server (a second instance of the service)',
  probeChromium(),
  () => {
    let a: TestClient;
    let b: TestClient;
    let browser: Browser;
    let context: BrowserContext;
    let alice: SignedIn;
    let bob: SignedIn;
    let admin: SignedIn;
    /** B's user, signed in at B (their grants, their conversations). */
    let bAlice: SignedIn;
    /** alice's personal connection to B, and an administrator's shared one offered to MCP clients. */
    let personal: string;
    let shared: string;
    /** How B's conversation_search lists the conversation of B's user: only their token finds it. */
    let found: string;
    /** The grants at B behind alice's personal connection (her first sign-in) and the shared one. */
    let personalGrant: string;
    let sharedGrant: string;
    /** How far B's clock runs ahead of A's (only ever forward, so that no token B issued is from its future). */
    let bClockAheadMs = 0;
    const A = () => a.app.url('main');
    const bMcp = () => `${b.app.url('main')}/mcp`;

    beforeAll(async () => {
      // Each instance on a port chosen first, so that PUBLIC_URL is its real URL: A's OAuth redirect URI is under it,
      // and B's issuer and resource (the token audience) are.
      const [portA, portB] = [await unusedPort(), await unusedPort()];
      b = await startTestClient(
        { PORT: String(portB), PUBLIC_URL: `http://127.0.0.1:${portB}` },
        { now: () => new Date(Date.now() + bClockAheadMs) },
      );
      a = await startTestClient({
        PORT: String(portA),
        PUBLIC_URL: `http://127.0.0.1:${portA}`,
        // B listens on loopback, which the outbound guard refuses unless allowed.
        CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1,localhost',
        CONNECTIONS_TIMEOUT_MS: '5000',
      });
      [alice, bob, admin, bAlice] = await Promise.all([
        a.as('alice'),
        a.as('bob'),
        a.as('admin', { password: ADMIN_PASSWORD }),
        b.as(B_USER),
      ]);
      // Something at B that only B's user can find.
      const said = await bAlice.post('/mcp/message', { query: `${MARKER} is the word of the day` });
      expect(said.status, JSON.stringify(said.body)).toBe(200);
      found = `[${said.body.conversation_id as string}] ${MARKER} is the word of the day (user,`;
      browser = await launchChromium();
      context = await browser.newContext();
    }, 60_000);

    afterAll(async () => {
      await context?.close();
      await browser?.close();
      await a?.close();
      await b?.close();
    });

    /**
     * A tool call by A's agent: the offline model calls `/tool <name> {json}` and quotes the result in its answer
     * (`the tool <name> returned "<result>". You asked: …`). Answers the quoted result, or the whole answer when the
     * model called nothing (the question, which names the marker, is left out either way).
     */
    async function agentCall(user: SignedIn, name: string, args: Json = { query: MARKER }): Promise<string> {
      const res = await user.post('/mcp/message', { query: `/tool ${name} ${JSON.stringify(args)}` });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const answer = String(res.body.response);
      const quoted = /^Offline model: the tool \S+ returned "([\s\S]*)"\. You asked: /.exec(answer);
      return quoted ? quoted[1]! : answer.replace(/you said "[\s\S]*?"\./, 'you said "…".');
    }

    /** The access token A now holds for alice at a connection (refreshed first if it is about to expire). */
    async function accessTokenAt(connectionId: string): Promise<string> {
      const row = await a.app.infrastructure.db.kysely
        .selectFrom('mcp_connections')
        .selectAll()
        .where('id', '=', connectionId)
        .executeTakeFirstOrThrow();
      return a.app.services.connections.oauth.accessToken(row, alice.id);
    }

    /** B's grants for its user (one per sign-in of a connection at A). */
    async function grantsAtB(): Promise<Json[]> {
      const res = await bAlice.get<{ grants: Json[] }>('/api/v1/oauth/grants');
      expect(res.status).toBe(200);
      return res.body.grants;
    }

    /**
     * Connects `user`'s account at B in the browser, as the connections page does: the POST from a page on A's origin
     * (so the HttpOnly binding cookie lands in this browser), B's consent page, and A's callback, which sends the
     * browser back to `return_to`.
     */
    async function connectInBrowser(
      user: SignedIn,
      connectionId: string,
      answer: 'Allow' | 'Deny' = 'Allow',
    ): Promise<void> {
      const page = await context.newPage();
      try {
        await page.goto(`${A()}/health`);
        const returnTo = `${A()}/health?from=connections`;
        const started = await page.evaluate(
          async ({ url, credentials, returnTo }) => {
            const res = await fetch(url, {
              method: 'POST',
              headers: { ...credentials, 'Content-Type': 'application/json' },
              body: JSON.stringify({ return_to: returnTo }),
            });
            return { status: res.status, body: (await res.json()) as { authorization_url?: string } };
          },
          { url: `${A()}/api/v1/connections/${connectionId}/account`, credentials: user.credentials, returnTo },
        );
        expect(started.status, JSON.stringify(started.body)).toBe(200);
        const authorizationUrl = new URL(started.body.authorization_url!);
        // The sign-in goes to B's authorization endpoint, with PKCE and the resource (B's MCP endpoint).
        expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${b.app.url('main')}/oauth/authorize`);
        expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
        expect(authorizationUrl.searchParams.get('resource')).toBe(bMcp());
        expect(authorizationUrl.searchParams.get('redirect_uri')).toBe(`${A()}/api/v1/connections/oauth/callback`);
        // The sign-in is bound to this browser by an HttpOnly cookie only the callback receives.
        const binding = (await context.cookies()).find((c) => c.name === 'connection_sign_in');
        expect(binding).toMatchObject({ httpOnly: true, path: '/api/v1/connections/oauth/callback' });

        await page.goto(authorizationUrl.href);
        await page.getByLabel('Username or email').fill(B_USER);
        await page.getByLabel('Password').fill(PASSWORD);
        await Promise.all([
          page.waitForURL((url) => url.href.startsWith(returnTo), { timeout: 15_000 }),
          page.getByRole('button', { name: answer }).click(),
        ]);
        // Back where the user started, told which connection and how it went.
        const back = new URL(page.url());
        expect(back.searchParams.get('from')).toBe('connections');
        expect(back.searchParams.get('connection')).toBe(connectionId);
        if (answer === 'Allow') expect(back.searchParams.get('connected')).toBe('1');
        else expect(back.searchParams.get('error')).toBe('access_denied');
        // The binding cookie was spent by the callback.
        expect((await context.cookies()).some((c) => c.name === 'connection_sign_in')).toBe(false);
      } finally {
        await page.close();
      }
    }

    it('1. registers an OAuth connection; its test asks alice to connect her account first', async () => {
      const created = await alice.post('/api/v1/connections', {
        name: 'B personal',
        slug: 'bp',
        transport: 'streamable_http',
        url: bMcp(),
        auth: { kind: 'oauth' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toMatchObject({ auth: { kind: 'oauth' }, account: { status: 'not_connected' } });
      personal = created.body.id as string;

      const test = await alice.post(`/api/v1/connections/${personal}/test`);
      expect(test.status).toBe(200);
      expect(test.body).toMatchObject({
        ok: false,
        error: { code: 'CONNECTION_ACCOUNT_REQUIRED' },
        connect_url: `${a.app.url('playground')}/#connections?connect=${personal}`,
      });
    });

    it('2. alice connects her B account in the browser: discovery, registration, consent, PKCE, the callback', async () => {
      // Declining at B's consent page comes back to the page with the error, and connects nothing.
      await connectInBrowser(alice, personal, 'Deny');
      expect((await alice.get(`/api/v1/connections/${personal}`)).body).toMatchObject({
        account: { status: 'not_connected' },
      });
      expect(await grantsAtB()).toEqual([]);

      await connectInBrowser(alice, personal);
      expect((await alice.get(`/api/v1/connections/${personal}`)).body).toMatchObject({
        account: { status: 'connected' },
      });
      // B recorded the grant for its user, to the client A registered there.
      const grants = await grantsAtB();
      expect(grants).toEqual([expect.objectContaining({ client_name: 'Agent Service', resource: bMcp() })]);
      personalGrant = grants[0]!.grant_id as string;

      const test = await alice.post(`/api/v1/connections/${personal}/test`);
      expect(test.body, JSON.stringify(test.body)).toMatchObject({ ok: true });
      expect(test.body.tools).toBeGreaterThan(0);
    });

    it('3a. A’s agent calls B’s tool with alice’s own B token', async () => {
      const answer = await agentCall(alice, 'bp__conversation_search');
      // B's conversation_search searches the token's user's conversations: the marker only B's user wrote came back.
      expect(answer).toContain(found);
    });

    it('3b. a builder workflow’s tool node calls B’s tool as alice', async () => {
      const builder = alice.at('builder');
      // The tool is offered to alice's workflows, as a tool of its connected server.
      const tools = await builder.get<Json[]>('/api/builder/tools');
      expect(tools.body.find((t) => t.name === 'bp__conversation_search')).toMatchObject({
        server: { id: personal, slug: 'bp' },
        annotations: { readOnlyHint: true },
      });
      const created = await builder.post('/api/builder/workflows', {
        name: 'Search at B',
        nodes: [
          { id: 'start', type: 'start', position: { x: 0, y: 0 }, data: {} },
          {
            id: 'lookup',
            type: 'tool',
            position: { x: 200, y: 0 },
            data: { label: 'Search at B', tool: 'bp__conversation_search', args: { query: '{{ input }}' } },
          },
          { id: 'end', type: 'end', position: { x: 400, y: 0 }, data: {} },
        ],
        edges: [
          { id: 'e1', source: 'start', target: 'lookup' },
          { id: 'e2', source: 'lookup', target: 'end' },
        ],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const run = await builder.post(`/api/builder/workflows/${created.body.workflow_id as string}/run`, {
        input: MARKER,
      });
      expect(run.status, JSON.stringify(run.body)).toBe(200);
      expect(run.body).toMatchObject({ status: 'completed', path: ['start', 'lookup', 'end'], error: null });
      // B's search for the token's user found what only B's user wrote.
      expect(String(run.body.output)).toContain(found);
    });

    it('3c. a shared connection in gateway mode: alice’s MCP client calls B’s tool through A, with her B token', async () => {
      const created = await admin.post('/api/v1/connections', {
        name: 'B shared',
        slug: 'bs',
        scope: 'shared',
        transport: 'streamable_http',
        url: bMcp(),
        auth: { kind: 'oauth' },
        gateway: true,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      shared = created.body.id as string;
      // Each person connects their own account at a shared connection too.
      expect((await alice.get(`/api/v1/connections/${shared}`)).body).toMatchObject({
        scope: 'shared',
        account: { status: 'not_connected' },
      });
      await connectInBrowser(alice, shared);
      // Another client registration at B (one per connection), and a grant of its own.
      const grants = await grantsAtB();
      expect(grants).toHaveLength(2);
      sharedGrant = grants.find((g) => g.grant_id !== personalGrant)!.grant_id as string;

      const client = new Client({ name: 'gateway-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${A()}/mcp`), { requestInit: { headers: alice.credentials } }),
      );
      try {
        const names = (await client.listTools()).tools.map((t) => t.name);
        expect(names).toContain('bs__conversation_search');
        // A personal connection is no gateway: its tools are the agent's and the builder's, not MCP clients'.
        expect(names.some((n) => n.startsWith('bp__'))).toBe(false);
        const result = await client.callTool({ name: 'bs__conversation_search', arguments: { query: MARKER } });
        expect(result.isError).toBe(false);
        // B's search as B's user: the call carried alice's token at B, not anyone else's.
        expect(JSON.stringify(result.content)).toContain(found);
      } finally {
        await client.close();
      }
    });

    it('4. bob is not offered alice’s connection, and must connect his own account at the shared one', async () => {
      const tools = await bob.at('builder').get<Json[]>('/api/builder/tools');
      expect(tools.status).toBe(200);
      expect(tools.body.some((t) => String(t.name).startsWith('bp__'))).toBe(false);
      // A direct call of alice's tool is not even offered to bob's agent: nothing goes to B.
      const direct = await agentCall(bob, 'bp__conversation_search');
      expect(direct).toContain('The tool bp__conversation_search is not offered here');
      expect(direct).not.toContain(MARKER);

      // The shared connection's tools are offered to bob, but he has no account at B: the agent passes on where to
      // connect one.
      const connectUrl = `${a.app.url('playground')}/#connections?connect=${shared}`;
      const prompt = await agentCall(bob, 'bs__conversation_search');
      expect(prompt).toContain(`Connect your B shared account to use its tools: ${connectUrl}`);
      expect(prompt).not.toContain(MARKER);

      // Through MCP, the same is a URL elicitation (-32042) naming where to connect.
      const client = new Client({ name: 'gateway-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${A()}/mcp`), { requestInit: { headers: bob.credentials } }),
      );
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toContain('bs__conversation_search');
        // alice's personal connection is neither bob's nor a gateway: to his MCP client it is an unknown tool.
        const unknown = await client.callTool({ name: 'bp__conversation_search', arguments: { query: MARKER } }).then(
          (result) => JSON.stringify(result),
          (thrown: unknown) => String(thrown),
        );
        expect(unknown).toMatch(/not found/i);
        expect(unknown).not.toContain(MARKER);
        const error = await client.callTool({ name: 'bs__conversation_search', arguments: { query: MARKER } }).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(McpError);
        expect((error as McpError).code).toBe(-32042);
        expect((error as McpError).data).toMatchObject({ elicitations: [{ mode: 'url', url: connectUrl }] });
      } finally {
        await client.close();
      }
    });

    it('5. an expired token is refreshed before use, and the refresh token rotates', async () => {
      const db = a.app.infrastructure.db.kysely;
      const account = () =>
        db
          .selectFrom('mcp_connection_accounts')
          .selectAll()
          .where('connection_id', '=', personal)
          .where('user_id', '=', alice.id)
          .executeTakeFirstOrThrow();
      const before = await account();
      expect(Date.parse(before.expires_at!)).toBeGreaterThan(Date.now());
      const accessBefore = await accessTokenAt(personal);
      const refreshTokensAtB = () =>
        b.app.infrastructure.db.kysely
          .selectFrom('oauth_refresh_tokens')
          .select(['token_hash', 'used_at'])
          .where('grant_id', '=', personalGrant)
          .execute();
      expect(await refreshTokensAtB()).toEqual([expect.objectContaining({ used_at: null })]);

      // As if B's access token had run out.
      await db
        .updateTable('mcp_connection_accounts')
        .set({ expires_at: new Date(Date.now() - 60_000).toISOString() })
        .where('connection_id', '=', personal)
        .where('user_id', '=', alice.id)
        .execute();
      expect(await agentCall(alice, 'bp__conversation_search')).toContain(found);

      const after = await account();
      expect(after.tokens).not.toBe(before.tokens);
      expect(Date.parse(after.expires_at!)).toBeGreaterThan(Date.now());
      expect(await accessTokenAt(personal)).not.toBe(accessBefore);
      // B spent the old refresh token and issued a new one (rotation); the old one is never presented again.
      const rotated = await refreshTokensAtB();
      expect(rotated).toHaveLength(2);
      expect(rotated.filter((t) => t.used_at === null)).toHaveLength(1);
    });

    it('5b. a token B refuses before A expected it to is refreshed once, and the call retried', async () => {
      const before = await accessTokenAt(personal);
      // B's clock jumps 16 minutes ahead: the access token A holds (B issues them for 15) has expired at B, while A
      // still takes it for good. B answers the call 401; A refreshes and calls again, and the user sees the result.
      bClockAheadMs = 16 * 60_000;
      bAlice = await b.as(B_USER); // her own sign-in at B ran out with it
      expect(await agentCall(alice, 'bp__conversation_search')).toContain(found);
      expect(await accessTokenAt(personal)).not.toBe(before);
    });

    it('6. once alice revokes the grant at B, A asks her to connect again; reconnecting works', async () => {
      const access = await accessTokenAt(personal);
      expect((await bAlice.delete(`/api/v1/oauth/grants/${personalGrant}`)).status).toBe(204);
      // B no longer takes the access token A holds (nor, with the grant gone, its refresh token).
      const refused = await fetch(bMcp(), {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${access}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(refused.status).toBe(401);
      await refused.body?.cancel();

      const prompt = await agentCall(alice, 'bp__conversation_search');
      expect(prompt).toContain(
        `Connect your B personal account to use its tools: ${a.app.url('playground')}/#connections?connect=${personal}`,
      );
      expect(prompt).not.toContain(MARKER);
      expect((await alice.get(`/api/v1/connections/${personal}`)).body).toMatchObject({
        account: { status: 'not_connected' },
      });

      await connectInBrowser(alice, personal);
      expect(await agentCall(alice, 'bp__conversation_search')).toContain(found);
    });

    it('7. disconnecting forgets the account at A and revokes its grant at B', async () => {
      // B advertises where to revoke (RFC 7009), so A revokes there rather than only forgetting the tokens.
      const metadata = await fetch(`${b.app.url('main')}/.well-known/oauth-authorization-server`);
      expect(((await metadata.json()) as Json).revocation_endpoint).toBe(`${b.app.url('main')}/oauth/revoke`);
      const grants = await grantsAtB();
      expect(grants).toHaveLength(2);
      // The reconnection of step 6 made a new grant; the revoked one is gone.
      const reconnected = grants.find((g) => g.grant_id !== sharedGrant)!.grant_id as string;
      expect(reconnected).not.toBe(personalGrant);

      const res = await alice.delete(`/api/v1/connections/${personal}/account`);
      expect(res.status).toBe(204);
      expect((await alice.get(`/api/v1/connections/${personal}`)).body).toMatchObject({
        account: { status: 'not_connected' },
      });
      // A revoked its tokens at B: that grant went, the shared connection's stays.
      expect((await grantsAtB()).map((g) => g.grant_id)).toEqual([sharedGrant]);
      const prompt = await agentCall(alice, 'bp__conversation_search');
      expect(prompt).toContain('Connect your B personal account to use its tools');
    });
  },
);
