import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { askThenAnswer } from '../builder/helpers.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { startTestApp } from '../helpers/app.js';
import { requester } from '../helpers/client.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import { TASKS_CAPABILITY, connectModernClient, postMcp, postModern } from '../helpers/mcp.js';
import { twoInstances } from '../helpers/instances.js';
import { describeWithService, probePostgresAndRedis } from '../helpers/services.js';

/**
 * Two instances on one PostgreSQL and one Redis, as behind a load balancer: whatever one instance issues or
 * changes holds on the other at once, and a stateless MCP client is served whichever instance each request reaches.
 */
const services = await probePostgresAndRedis();

describeWithService('two instances on PostgreSQL and Redis', services, () => {
  const instances = twoInstances('two', { MCP_REQUESTS_PER_MINUTE: '6' }, { MCP_SESSION_MODE: 'stateless' });
  let a: App;
  let b: App;
  let env: Record<string, string>;
  beforeAll(() => void ({ a, b, env } = instances));

  /** A load balancer without stickiness: each request goes to the next instance in turn; `reached` lists them. */
  function roundRobin(instances: App[]) {
    const reached: string[] = [];
    let turn = 0;
    const fetchNext = (input: string | URL | Request, init?: RequestInit) => {
      const to = new URL(instances[turn++ % instances.length]!.url('main'));
      const url = new URL(input instanceof Request ? input.url : input.toString());
      url.host = to.host;
      reached.push(to.host);
      return fetch(url, init);
    };
    return { fetch: fetchNext, reached };
  }

  function mcpClient(app: App, token: string, fetchVia: typeof fetch = fetch) {
    const transport = new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: fetchVia,
    });
    return { client: new Client({ name: 'balanced', version: '1.0.0' }), transport };
  }

  const login = (app: App) => call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });

  it('a token from A works on B; refreshed on B and logged out on A, it fails on both', async () => {
    const issued = await login(a);
    const token = issued.body.access_token as string;
    expect((await call(b, 'GET', '/auth/me', { token })).status).toBe(200);
    const refreshed = await call(b, 'POST', '/auth/refresh', { body: { refresh_token: issued.body.refresh_token } });
    expect(refreshed.status).toBe(200);
    const renewed = refreshed.body.access_token as string;
    expect((await call(a, 'POST', '/auth/logout', { token: renewed })).status).toBe(200);
    for (const app of [a, b])
      for (const credential of [token, renewed])
        expect((await call(app, 'GET', '/auth/me', { token: credential })).status).toBe(401);
  });

  it('an API key rotated on A fails at once on B', async () => {
    const token = (await login(a)).body.access_token as string;
    const created = await call(a, 'POST', '/api/v1/api-keys', { token, body: { name: 'laptop' } });
    const apiKey = created.body.api_key as string;
    expect((await call(b, 'GET', '/auth/me', { apiKey })).status).toBe(200);
    const rotated = await call(a, 'POST', `/api/v1/api-keys/${created.body.key_id as string}/rotate`, { token });
    expect(rotated.status).toBe(200);
    expect((await call(b, 'GET', '/auth/me', { apiKey })).status).toBe(401);
    expect((await call(b, 'GET', '/auth/me', { apiKey: rotated.body.new_api_key as string })).status).toBe(200);
  });

  it('shares rate limits: the budget spent on A is spent on B', async () => {
    await createUser(a, 'carol');
    const token = (await call(a, 'POST', '/auth/login', { body: { username: 'carol', password: PASSWORD } })).body
      .access_token as string;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await call(i % 2 === 0 ? a : b, 'GET', '/tools', { token })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  });

  it('serves a stateless MCP client whichever instance each request reaches', async () => {
    const token = (await login(a)).body.access_token as string;
    const balancer = roundRobin([a, b]);
    const reached = balancer.reached;
    const { client, transport } = mcpClient(a, token, balancer.fetch);
    await client.connect(transport);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('conversation_search');
    const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } });
    expect(result.isError).toBe(false);
    await client.close();
    expect(new Set(reached).size).toBe(2);
    // Nothing was kept in either instance, and there is no session to stream on or to end.
    expect(a.wires.streamable.size + b.wires.streamable.size).toBe(0);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${b.url('main')}/mcp`, {
        method,
        headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
  });

  it('serves a 2026-07-28 client whichever instance each request reaches, with nothing kept', async () => {
    // A user of its own: these instances allow 6 MCP requests a minute, and the probe is one.
    await createUser(a, 'dora');
    const token = (await call(b, 'POST', '/auth/login', { body: { username: 'dora', password: PASSWORD } })).body
      .access_token as string;
    const balancer = roundRobin([a, b]);
    const client = await connectModernClient(a, token, { fetch: balancer.fetch });
    for (let i = 0; i < 2; i++) {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('conversation_search');
      const result = await client.callTool({ name: 'conversation_search', arguments: { query: `x${i}` } });
      expect(result.isError).toBe(false);
    }
    await client.close();
    expect(new Set(balancer.reached).size).toBe(2);
    expect(a.wires.streamable.size + b.wires.streamable.size).toBe(0);
  });

  describe('stateful MCP sessions (the default mode)', () => {
    let c: App;
    let d: App;
    // A budget these tests do not exhaust (the instances above share a small one).
    const stateful = () => ({ ...env, MCP_REQUESTS_PER_MINUTE: '1000' });
    beforeAll(async () => {
      c = await startTestApp(stateful());
      d = await startTestApp(stateful());
    }, 60_000);
    afterAll(async () => {
      await c?.close();
      await d?.close();
    });

    it('continues a session opened through one instance on the other, as one session', async () => {
      const token = (await login(c)).body.access_token as string;
      const balancer = roundRobin([c, d]);
      const { client, transport } = mcpClient(c, token, balancer.fetch);
      await client.connect(transport); // initialize reaches C, the `initialized` notification D
      const id = transport.sessionId;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('conversation_search');
      const result = await client.callTool({ name: 'conversation_search', arguments: { query: 'x' } });
      expect(result.isError).toBe(false);
      expect(new Set(balancer.reached).size).toBe(2);
      // One session, held by both instances under the id C gave it.
      expect(transport.sessionId).toBe(id);
      expect([c.wires.streamable.size, d.wires.streamable.size]).toEqual([1, 1]);

      // Ended through one instance (DELETE), it is ended on both.
      await transport.terminateSession();
      await expect.poll(() => c.wires.streamable.size + d.wires.streamable.size).toBe(0);
      for (const app of [c, d]) {
        const res = await postMcp(app, token, { method: 'tools/list' }, id);
        expect(res.status).toBe(404);
      }
      await client.close();
    });

    it('outlives the instance that opened it', async () => {
      const e = await startTestApp(stateful());
      const token = (await login(e)).body.access_token as string;
      const { client, transport } = mcpClient(e, token);
      await client.connect(transport);
      const id = transport.sessionId!;
      await e.close(); // a rolling deployment replaces the instance

      const res = await postMcp(d, token, { method: 'tools/list' }, id);
      expect(res.status).toBe(200);
      expect(res.headers.get('mcp-session-id')).toBe(id);
      expect(await res.text()).toContain('conversation_search');
      await client.close();
    });

    it('offers a workflow published through one instance on the other, and runs it as a task across both', async () => {
      const token = (await login(c)).body.access_token as string;
      // A 2026-07-28 client listening on D hears of a publication made through C.
      const listener = await connectModernClient(d, token);
      const changed = new Promise<void>((resolve) =>
        listener.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
      );
      const subscription = await listener.listen({ toolsListChanged: true });
      const builder = requester(c, { token }, 'builder');
      const created = await builder.post('/api/builder/workflows', askThenAnswer('Across instances'));
      const published = await builder.post(`/api/builder/workflows/${created.body.workflow_id as string}/publish`);
      const tool = published.body.tool_name as string;
      await changed;
      expect((await listener.listTools()).tools.map((t) => t.name)).toContain(tool);
      await subscription.close();
      await listener.close();

      // A task started through C is polled and answered through D, and finishes; C reads its result.
      const started = await postModern(
        c,
        token,
        'tools/call',
        { name: tool, arguments: { input: 'Hi' } },
        TASKS_CAPABILITY,
      );
      const taskId = started.result!.taskId as string;
      const get = (app: App) => postModern(app, token, 'tasks/get', { taskId }, TASKS_CAPABILITY);
      // The process's first workflow run loads LangGraph first.
      await expect
        .poll(async () => (await get(d)).result?.status, { interval: 100, timeout: 10_000 })
        .toBe('input_required');
      const [key] = Object.keys((await get(d)).result!.inputRequests as Record<string, unknown>);
      const answer = { [key!]: { action: 'accept', content: { answer: 'green herons' } } };
      await postModern(d, token, 'tasks/update', { taskId, inputResponses: answer }, TASKS_CAPABILITY);
      await expect.poll(async () => (await get(c)).result?.status, { interval: 100 }).toBe('completed');
      const finished = (await get(c)).result!.result as { structuredContent: { output: string } };
      expect(finished.structuredContent.output).toMatch(/you said "green herons"/);

      // A question asked through C is answered on the retry through D: its state is sealed with the shared key.
      const forms = { elicitation: { form: {} } };
      const asked = await postModern(c, token, 'tools/call', { name: tool, arguments: { input: 'Hi' } }, forms);
      const { inputRequests, requestState } = asked.result as { inputRequests: object; requestState: string };
      const retry = {
        name: tool,
        arguments: { input: 'Hi' },
        requestState,
        inputResponses: { [Object.keys(inputRequests)[0]!]: { action: 'accept', content: { answer: 'grey seals' } } },
      };
      const answered = await postModern(d, token, 'tools/call', retry, forms);
      expect(answered.result).toMatchObject({ structuredContent: { status: 'completed' } });
    });

    it('tells a client listening on one instance of a conversation updated through the other', async () => {
      const token = (await login(c)).body.access_token as string;
      const started = await postModern(c, token, 'tools/call', { name: 'chat', arguments: { query: 'Hello' } });
      const id = (started.result!.structuredContent as { conversation_id: string }).conversation_id;
      const listener = await connectModernClient(d, token);
      const updated = new Promise<string>((resolve) =>
        listener.setNotificationHandler('notifications/resources/updated', (note) => resolve(note.params.uri)),
      );
      const subscription = await listener.listen({ resourceSubscriptions: [`conversation://${id}`] });
      await postModern(c, token, 'tools/call', { name: 'chat', arguments: { query: 'Again', conversation_id: id } });
      expect(await updated).toBe(`conversation://${id}`);
      await subscription.close();
      await listener.close();
    });

    it('cancels, through one instance, a task working on the other: its model call stops there', async () => {
      const fake = await startFakeOpenAi(['gpt-fake']);
      fake.chunkDelayMs = 200;
      fake.replies.push({ text: 'a long answer that streams slowly, word by word, for a good while' });
      const llm = { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'gpt-fake', LLM_API_KEY: 'sk-fake' };
      const e = await startTestApp({ ...stateful(), ...llm });
      try {
        const token = (await login(e)).body.access_token as string;
        const started = await postModern(
          e,
          token,
          'tools/call',
          { name: 'agent_chat', arguments: { message: 'Go' } },
          TASKS_CAPABILITY,
        );
        const taskId = started.result!.taskId as string;
        await expect.poll(() => fake.requests.filter((r) => r.path === '/v1/chat/completions').length).toBe(1);
        // D does not run the task: it tells the instance that does, which stops the model call.
        const cancel = await postModern(d, token, 'tasks/cancel', { taskId }, TASKS_CAPABILITY);
        expect(cancel.result).toMatchObject({ resultType: 'complete' });
        await expect.poll(() => fake.abandoned, { timeout: 5_000 }).toBe(1);
        const seen = await postModern(e, token, 'tasks/get', { taskId }, TASKS_CAPABILITY);
        expect(seen.result).toMatchObject({ status: 'cancelled' });
      } finally {
        await e.close();
        await fake.close();
      }
    });

    it("does not let another user continue someone's session on another instance", async () => {
      await createUser(c, 'mallory');
      const alice = (await login(c)).body.access_token as string;
      const mallory = (await call(c, 'POST', '/auth/login', { body: { username: 'mallory', password: PASSWORD } })).body
        .access_token as string;
      const { client, transport } = mcpClient(c, alice);
      await client.connect(transport);
      const before = d.wires.streamable.size;
      const res = await postMcp(d, mallory, { method: 'tools/list' }, transport.sessionId);
      expect(res.status).toBe(404);
      expect(d.wires.streamable.size).toBe(before);
      expect((await postMcp(d, alice, { method: 'tools/list' }, transport.sessionId)).status).toBe(200);
      await client.close();
    });
  });
});
