import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { call, servicePrincipalToken } from '../helpers/auth.js';
import { type Json, type Requester, requester, startTestClient } from '../helpers/client.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { TOOL_NAMES, sdkTransports } from '../helpers/mcp.js';

const closing = closeAfterEach();

async function setUp(env: Record<string, string> = {}) {
  const { app, as } = closing(await startTestClient(env));
  return { app, alice: await as('alice'), bob: await as('bob') };
}

const toolCall = (caller: Requester, name: string, args: Json = {}) =>
  caller.post('/mcp/tools/call', { method: 'tools/call', params: { name, arguments: args } });

/** Reads a streamed response's `data: <json>` events. */
async function events(res: Response): Promise<Json[]> {
  const text = await res.text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as Json);
}

describe('REST-style MCP endpoints', () => {
  it('initializes with protocol 2024-11-05 and the server’s capabilities', async () => {
    const { alice } = await setUp();
    const res = await alice.post('/mcp/initialize', {
      protocolVersion: '2024-11-05',
      capabilities: { roots: { listChanged: true }, sampling: {} },
      clientInfo: { name: 'test', version: '1' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      protocolVersion: '2024-11-05',
      serverInfo: { name: 'agent-service', version: '2.8.0' },
      capabilities: {
        logging: {},
        tools: { listChanged: true },
        resources: { subscribe: false, listChanged: true },
        prompts: { listChanged: true },
      },
    });
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('99');
  });

  it('lists every tool with JSON Schema inputs', async () => {
    const { alice } = await setUp();
    const res = await alice.post('/mcp/tools/list', { method: 'tools/list' });
    const tools = res.body.tools as {
      name: string;
      inputSchema: { type: string; properties: Json; required?: string[] };
      annotations: Json;
    }[];
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const chat = tools[0]!;
    expect(chat.inputSchema).toMatchObject({
      type: 'object',
      required: ['query'],
      properties: { query: { type: 'string' }, conversation_id: { type: 'string' } },
    });
    expect(tools[1]!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    expect((await alice.get('/tools')).body.tools).toHaveLength(TOOL_NAMES.length);
  });

  it('chats through the offline model and continues the conversation', async () => {
    const { alice } = await setUp();
    const first = await toolCall(alice, 'chat', { query: 'Hello there, agent' });
    expect(first.status).toBe(200);
    const structured = first.body.structuredContent as {
      conversation_id: string;
      model: string;
      response: string;
      usage: Json;
    };
    expect(structured.model).toBe('offline');
    expect(structured.response).toMatch(/^Offline model: you said "Hello there, agent"/);
    expect((first.body.content as { text: string }[])[0]!.text).toBe(structured.response);
    expect(structured.usage).toEqual({
      prompt_tokens: expect.any(Number) as unknown,
      completion_tokens: expect.any(Number) as unknown,
      total_tokens: expect.any(Number) as unknown,
    });

    const second = await toolCall(alice, 'chat', {
      query: 'And again',
      conversation_id: structured.conversation_id,
    });
    const again = second.body.structuredContent as { response: string; conversation_id: string };
    expect(again.conversation_id).toBe(structured.conversation_id);
    expect(again.response).toMatch(/2 earlier messages/);

    const got = await toolCall(alice, 'conversation_get', { conversation_id: structured.conversation_id });
    const messages = (got.body.structuredContent as { messages: { role: string; content: string }[] }).messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(messages[0]!.content).toBe('Hello there, agent');
  });

  it('keeps conversations private: another user gets a tool error, not the conversation', async () => {
    const { alice, bob } = await setUp();
    const { conversation_id } = (await toolCall(alice, 'chat', { query: 'secret plans' })).body.structuredContent as {
      conversation_id: string;
    };
    const peek = await toolCall(bob, 'conversation_get', { conversation_id });
    expect(peek.status).toBe(200);
    expect(peek.body).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: `Conversation ${conversation_id} not found` }],
    });
    const search = await toolCall(bob, 'conversation_search', { query: 'secret' });
    expect((search.body.structuredContent as { matches: unknown[] }).matches).toEqual([]);
    const own = await toolCall(alice, 'conversation_search', { query: 'SECRET plans' });
    expect((own.body.structuredContent as { matches: { conversation_id: string }[] }).matches[0]!.conversation_id).toBe(
      conversation_id,
    );
  });

  it('searches the service’s own documentation with search_web when no search engine is configured', async () => {
    const { alice } = await setUp();
    const res = await toolCall(alice, 'search_web', { query: 'refresh token reuse' });
    const results = (res.body.structuredContent as { results: { url: string; source: string }[] }).results;
    expect(results.length).toBeGreaterThan(0);
    expect(results[0]).toMatchObject({
      source: 'documentation',
      url: expect.stringMatching(/^agent-service:\/\/docs\/readme#/) as unknown,
    });
  });

  it('lets the agent call tools: the offline model’s search rule runs search_web and answers from its result', async () => {
    const { alice } = await setUp();
    const res = await toolCall(alice, 'agent_chat', { message: 'search for session cookie' });
    const answer = res.body.structuredContent as { response: string; conversation_id: string };
    expect(answer.response).toMatch(/search_web/);
    const got = await toolCall(alice, 'conversation_get', { conversation_id: answer.conversation_id });
    const roles = (got.body.structuredContent as { messages: { role: string }[] }).messages.map((m) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('answers a call of one of the service’s own tools as an MCP client gets it, whatever the arguments', async () => {
    const { app, alice } = await setUp();
    await toolCall(alice, 'chat', { query: 'notes about refresh tokens', use_tools: false });
    const client = new Client({ name: 'rest-parity', version: '1.0.0' });
    await client.connect(sdkTransports['streamable HTTP'](app, alice.credentials));
    const calls: [string, Json][] = [
      ['conversation_search', { query: 'notes', limit: 1 }],
      ['conversation_search', { query: 'nothing like it' }],
      ['conversation_search', {}],
      ['conversation_get', { conversation_id: 'no-such-conversation' }],
      ['search_web', { query: 'refresh token' }],
      ['search_web', { query: 42 }],
      ['workflow_run_view', { run_id: 'no-such-run' }],
    ];
    try {
      for (const [name, args] of calls) {
        const rest = await toolCall(alice, name, args);
        expect(rest.status).toBe(200);
        expect(rest.body).toEqual(await client.callTool({ name, arguments: args }));
      }
    } finally {
      await client.close();
    }
  });

  it('validates tool arguments and reports unknown tools', async () => {
    const { alice } = await setUp();
    const bad = await toolCall(alice, 'chat', { query: 42 });
    expect(bad.body.isError).toBe(true);
    // The SDK reports an unknown tool as a failed tool call, as the MCP specification allows.
    const unknown = await toolCall(alice, 'nope');
    expect(unknown.body).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('Tool nope not found') as unknown }],
    });
    expect((await alice.post('/mcp/tools/call', { method: 'tools/list', params: { name: 'chat' } })).status).toBe(400);
  });

  it('lists and reads resources, including the caller’s conversations', async () => {
    const { alice } = await setUp();
    const { conversation_id } = (await toolCall(alice, 'chat', { query: 'remember this' })).body.structuredContent as {
      conversation_id: string;
    };
    const list = await alice.post('/mcp/resources/list', {});
    const uris = (list.body.resources as { uri: string }[]).map((r) => r.uri);
    expect(uris).toEqual(expect.arrayContaining(['agent-service://server', `conversation://${conversation_id}`]));
    const read = await alice.post('/mcp/resources/read', { params: { uri: `conversation://${conversation_id}` } });
    const contents = read.body.contents as { uri: string; mimeType: string; text: string }[];
    expect(contents[0]).toMatchObject({ uri: `conversation://${conversation_id}`, mimeType: 'application/json' });
    expect(JSON.parse(contents[0]!.text)).toMatchObject({
      conversation_id,
      messages: [{ role: 'user', content: 'remember this' }, { role: 'assistant' }],
    });
    expect((await alice.get('/resources')).body.resources).toEqual(list.body.resources);
  });

  it('lists prompts and fills them in', async () => {
    const { alice } = await setUp();
    const list = await alice.post('/mcp/prompts/list', { method: 'prompts/list' });
    expect(list.body.prompts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'research_topic',
          arguments: expect.arrayContaining([
            { name: 'topic', description: 'What to research', required: true },
          ]) as unknown,
        }),
        expect.objectContaining({ name: 'summarize_conversation' }),
      ]),
    );
    const got = await alice.post('/mcp/prompts/get', {
      params: { name: 'research_topic', arguments: { topic: 'MCP transports', depth: 'thorough' } },
    });
    expect(got.body).toMatchObject({
      messages: [
        { role: 'user', content: { type: 'text', text: expect.stringContaining('MCP transports') as unknown } },
      ],
    });
  });

  it('sets the logging level', async () => {
    const { alice } = await setUp();
    const res = await alice.post('/mcp/logging/setLevel', { method: 'logging/setLevel', params: { level: 'debug' } });
    expect(res).toMatchObject({ status: 200, body: { success: true } });
    expect((await alice.post('/mcp/logging/setLevel', { params: { level: 'loud' } })).status).toBe(400);
  });

  it('answers /mcp/message with a Message response, or streams it as data events', async () => {
    const { app, alice } = await setUp();
    const json = await alice.post('/mcp/message', { query: 'Stream me a reply please' });
    expect(json.body).toEqual({
      response: expect.stringMatching(/^Offline model/) as unknown,
      conversation_id: expect.any(String) as unknown,
      model: 'offline',
      usage: expect.any(Object) as unknown,
    });
    const res = await fetch(`${app.url('main')}/mcp/message`, {
      method: 'POST',
      headers: { ...alice.credentials, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'Stream me a reply please', stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const streamed = await events(res);
    expect(streamed[0]).toEqual({ type: 'content_start' });
    expect(streamed.at(-2)).toEqual({ type: 'content_end' });
    expect(streamed.at(-1)).toMatchObject({
      type: 'message_complete',
      conversation_id: expect.any(String) as unknown,
      model: 'offline',
    });
    const deltas = streamed.filter((e) => e.type === 'content_delta').map((e) => e.delta as string);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(json.body.response);
  });

  it('streams POST /message as NDJSON or SSE by Accept, and as JSON otherwise', async () => {
    const { app, alice } = await setUp();
    const send = (accept?: string) =>
      fetch(`${app.url('main')}/message`, {
        method: 'POST',
        headers: {
          ...alice.credentials,
          'Content-Type': 'application/json',
          ...(accept && { Accept: accept }),
        },
        body: JSON.stringify({ query: 'hi', context: { page: 'docs' } }),
      });
    const ndjson = await send('application/x-ndjson');
    expect(ndjson.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await ndjson.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    expect(lines.map((l) => l.type)).toEqual(
      expect.arrayContaining(['content_start', 'content_delta', 'content_end', 'message_complete']),
    );
    const sse = await events(await send('text/event-stream'));
    expect(sse[0]).toEqual({ type: 'content_start' });
    const plain = await send();
    expect(((await plain.json()) as Json).model).toBe('offline');
  });

  it('describes the server at GET /', async () => {
    const { alice } = await setUp();
    const res = await alice.get('/');
    expect(res.body).toMatchObject({
      name: 'agent-service',
      version: '2.8.0',
      protocolVersion: '2024-11-05',
      transports: { streamable_http: '/mcp', sse: '/sse', websocket: '/mcp/ws' },
    });
  });
});

describe('the MCP policy point on REST-style endpoints', () => {
  it('answers 401 {detail} with WWW-Authenticate without credentials', async () => {
    const { app } = await setUp();
    for (const path of ['/mcp/tools/list', '/mcp/message', '/message']) {
      const res = await call(app, 'POST', path, { body: {} });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Authentication required' });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
  });

  it('refuses a tool the caller may not call with 403 permission_denied, and hides tools it may not see', async () => {
    const { app, alice } = await setUp();
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:search_web' }]);
    const denied = await toolCall(alice, 'search_web', { query: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      error: { code: 'permission_denied', message: 'Permission denied: you may not call the tool search_web' },
    });
    const tools = (await alice.post('/mcp/tools/list', {})).body.tools as {
      name: string;
    }[];
    expect(tools.map((t) => t.name)).not.toContain('search_web');
    // A direct grant to one user restores it for that user only.
    const aliceUser = await app.services.users.getByUsername('alice');
    await app.infrastructure.authz.write([
      { user: `user:${aliceUser!.id}`, relation: 'executor', object: 'tool:search_web' },
    ]);
    expect((await toolCall(alice, 'search_web', { query: 'x' })).status).toBe(200);
    // The agent may not use it for others either: it is offered only what the caller may call.
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:chat' }]);
    expect((await alice.post('/mcp/message', { query: 'x' })).status).toBe(403);
  });

  it('limits requests per minute with 429, Retry-After and rate-limit headers', async () => {
    const { alice } = await setUp({ MCP_REQUESTS_PER_MINUTE: '3' });
    for (let i = 0; i < 3; i++) expect((await alice.post('/mcp/tools/list', {})).status).toBe(200);
    const limited = await alice.post('/mcp/tools/list', {});
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({
      error: { code: 'rate_limit_exceeded', retry_after: expect.any(Number) as unknown },
    });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
  });

  it('limits tool calls per minute separately', async () => {
    const { alice } = await setUp({ MCP_TOOL_CALLS_PER_MINUTE: '2' });
    expect((await toolCall(alice, 'search_web', { query: 'a' })).status).toBe(200);
    expect((await toolCall(alice, 'search_web', { query: 'b' })).status).toBe(200);
    const limited = await toolCall(alice, 'search_web', { query: 'c' });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
    expect((await alice.post('/mcp/tools/list', {})).status).toBe(200);
  });

  it('limits concurrent streams per caller', async () => {
    const { app, alice } = await setUp({ MCP_MAX_CONCURRENT_STREAMS: '1' });
    const open = await fetch(`${app.url('main')}/mcp/message`, {
      method: 'POST',
      headers: { ...alice.credentials, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: `${'word '.repeat(3000)}`, stream: true }),
    });
    const second = await alice.post('/mcp/message', { query: 'x', stream: true });
    expect(second.status).toBe(429);
    await open.text();
    expect((await alice.post('/mcp/message', { query: 'x' })).status).toBe(200);
  });

  it('accepts an API key and a permitted client-credentials token on tool calls', async () => {
    const { app, alice } = await setUp();
    const { api_key, key_id } = (await alice.post('/api/v1/api-keys', { name: 'mcp' })).body;
    const withKey = requester(app, { apiKey: api_key as string });
    const viaKey = await withKey.post('/mcp/tools/call', { params: { name: 'chat', arguments: { query: 'via key' } } });
    expect(viaKey.status).toBe(200);

    const bot = requester(app, { token: await servicePrincipalToken(app, alice.token, 'Bot') });
    expect((await toolCall(bot, 'chat', { query: 'as a bot' })).status).toBe(403);
    await app.infrastructure.authz.write([
      { user: 'service_principal:bot', relation: 'executor', object: 'tool:chat' },
    ]);
    expect((await toolCall(bot, 'chat', { query: 'as a bot' })).status).toBe(200);
    // Rotation ends the key at once, on MCP as everywhere.
    await alice.post(`/api/v1/api-keys/${String(key_id)}/rotate`);
    const stale = await withKey.post('/mcp/tools/list', {});
    expect(stale).toMatchObject({ status: 401, body: { detail: 'Invalid API key' } });
  });

  it('counts tool calls and messages in /metrics', async () => {
    const { app, alice } = await setUp();
    await toolCall(alice, 'search_web', { query: 'x' });
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:chat' }]);
    await toolCall(alice, 'chat', { query: 'x' });
    const text = await (await fetch(`${app.url('main')}/metrics`)).text();
    expect(text).toContain('mcp_tool_calls_total{tool="search_web",status="success"} 1');
    expect(text).toContain('mcp_tool_calls_total{tool="chat",status="denied"} 1');
    expect(text).toMatch(/mcp_messages_total\{method="tools\/call",status="success"\} 2/);
  });
});
