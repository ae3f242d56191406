import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { closeAfterEach } from '../helpers/app.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import { sdkTransports } from '../helpers/mcp.js';

// Every chat entry point (POST /mcp/message, POST /message, the MCP `chat` tool) offers the model the tools the
// caller may use, unless the request turns them off with `use_tools: false`. The offline model calls a tool for
// `search for <words>` and `/tool <name> {json}`; the calls show in the recorded conversation.

interface StoredMessage {
  role: string;
  content: string;
  tool_calls?: { name: string; arguments: Json }[];
  name?: string;
}
interface Answer {
  response: string;
  conversation_id: string;
}

const closing = closeAfterEach();

async function setUp(env: Record<string, string> = {}) {
  const { app, as } = closing(await startTestClient(env));
  return { app, alice: await as('alice'), bob: await as('bob') };
}

/** Reads a streamed answer: `data: <json>` events or JSON lines, whichever the response is. */
async function streamed(res: Response): Promise<Json[]> {
  return (await res.text())
    .split('\n')
    .map((line) => line.replace(/^data: /, ''))
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Json);
}

/** One turn through each chat entry point; each answers the Message response's conversation and text. */
type EntryPoint = (app: App, caller: SignedIn, query: string, extra?: Json) => Promise<Answer>;

async function ok(res: { status: number; body: Json }): Promise<Json> {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${JSON.stringify(res.body)}`);
  return Promise.resolve(res.body);
}

async function streamedAnswer(res: Response): Promise<Answer> {
  expect(res.status).toBe(200);
  const events = await streamed(res);
  const complete = events.find((e) => e.type === 'message_complete');
  if (!complete) throw new Error(`no message_complete in ${JSON.stringify(events)}`);
  const response = events
    .filter((e) => e.type === 'content_delta')
    .map((e) => e.delta as string)
    .join('');
  return { response, conversation_id: complete.conversation_id as string };
}

const entryPoints: Record<string, EntryPoint> = {
  'POST /mcp/message': async (_app, caller, query, extra = {}) =>
    (await ok(await caller.post('/mcp/message', { query, ...extra }))) as unknown as Answer,
  'POST /mcp/message (stream true)': async (app, caller, query, extra = {}) =>
    streamedAnswer(
      await fetch(`${app.url('main')}/mcp/message`, {
        method: 'POST',
        headers: { ...caller.credentials, 'Content-Type': 'application/json' },
        body: JSON.stringify({ query, stream: true, ...extra }),
      }),
    ),
  'POST /message': async (_app, caller, query, extra = {}) =>
    (await ok(await caller.post('/message', { query, ...extra }))) as unknown as Answer,
  'POST /message (NDJSON)': async (app, caller, query, extra = {}) =>
    streamedAnswer(
      await fetch(`${app.url('main')}/message`, {
        method: 'POST',
        headers: {
          ...caller.credentials,
          'Content-Type': 'application/json',
          Accept: 'application/x-ndjson',
        },
        body: JSON.stringify({ query, ...extra }),
      }),
    ),
  'the chat tool (POST /mcp/tools/call)': async (_app, caller, query, extra = {}) => {
    const body = await ok(
      await caller.post('/mcp/tools/call', {
        method: 'tools/call',
        params: { name: 'chat', arguments: { query, ...extra } },
      }),
    );
    expect(body.isError).toBe(false);
    return body.structuredContent as Answer;
  },
  'the chat tool (official SDK client over /mcp)': async (app, caller, query, extra = {}) => {
    const client = new Client({ name: 'chat-tools', version: '1.0.0' });
    const transport = sdkTransports['streamable HTTP'](app, caller.credentials);
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'chat', arguments: { query, ...extra } });
      expect(result.isError).toBe(false);
      return result.structuredContent as Answer;
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  },
};

/** The recorded conversation, read back as its owner. */
async function stored(owner: SignedIn, conversationId: string): Promise<StoredMessage[]> {
  const res = await owner.post('/mcp/tools/call', {
    params: { name: 'conversation_get', arguments: { conversation_id: conversationId } },
  });
  return (res.body.structuredContent as { messages: StoredMessage[] }).messages;
}

describe.each(Object.keys(entryPoints))('%s', (name) => {
  const send = entryPoints[name]!;

  it('offers the caller’s tools by default: the model calls search_web and answers from its result', async () => {
    const { app, alice } = await setUp();
    const answer = await send(app, alice, 'please search for session cookie');

    expect(answer.response).toContain('the tool search_web returned');
    const messages = await stored(alice, answer.conversation_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[1]!.tool_calls).toEqual([
      expect.objectContaining({ name: 'search_web', arguments: { query: 'session cookie' } }),
    ]);
    expect(messages[2]).toMatchObject({ role: 'tool', name: 'search_web' });
    expect(messages[2]!.content).toMatch(/^1\. /);
  });

  it('answers with the model alone when use_tools is false', async () => {
    const { app, alice } = await setUp();
    const answer = await send(app, alice, 'please search for session cookie', { use_tools: false });

    expect(answer.response).toMatch(/^Offline model: you said "please search for session cookie"/);
    expect(answer.response).not.toContain('Tools offered');
    const messages = await stored(alice, answer.conversation_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('offers only the tools the caller may use, and runs them with the caller’s rights', async () => {
    const { app, alice, bob } = await setUp();
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:search_web' }]);

    // search_web is not offered any more, nor are the tools that run the agent itself.
    const refused = await send(app, alice, '/tool search_web {"query": "session cookie"}');
    expect(refused.response).toContain('The tool search_web is not offered here.');
    expect(refused.response).toContain('Tools offered: conversation_get, conversation_search;');
    expect(await stored(alice, refused.conversation_id)).toHaveLength(2);
    const nested = await send(app, alice, '/tool agent_chat {"message": "recurse"}');
    expect(nested.response).toContain('The tool agent_chat is not offered here.');

    // conversation_get is offered, but reads only what the caller may see: bob's conversation stays his.
    const bobs = await send(app, bob, 'bob’s secret plans', { use_tools: false });
    const peek = await send(app, alice, `/tool conversation_get {"conversation_id": "${bobs.conversation_id}"}`);
    const messages = await stored(alice, peek.conversation_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2]).toMatchObject({
      name: 'conversation_get',
      content: `Conversation ${bobs.conversation_id} not found`,
    });
    expect(JSON.stringify(messages)).not.toContain('secret plans');
  });
});

describe('the tools offered to a model behind the fake OpenAI-compatible API', () => {
  const MODEL = 'fake-chat-model';

  it('are the caller’s permitted agent tools through every entry point, and none with use_tools false', async () => {
    const fake = closing(await startFakeOpenAi([MODEL]));
    const { app, alice } = await setUp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: MODEL });
    await app.infrastructure.authz.delete([
      { user: 'user:*', relation: 'executor', object: 'tool:conversation_search' },
    ]);
    const offered = () =>
      fake.requests
        .filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions')
        .map((r) => (r.body as { tools?: { function: { name: string } }[] }).tools?.map((t) => t.function.name));

    for (const send of Object.values(entryPoints)) {
      fake.replies.push({ text: 'With tools.' }, { text: 'Without tools.' });
      expect((await send(app, alice, 'Hello')).response).toBe('With tools.');
      expect((await send(app, alice, 'Hello', { use_tools: false })).response).toBe('Without tools.');
    }
    const perRequest = offered();
    expect(perRequest).toHaveLength(Object.keys(entryPoints).length * 2);
    for (const [i, tools] of perRequest.entries()) {
      if (i % 2 === 0) expect(tools).toEqual(['search_web', 'conversation_get']);
      else expect(tools).toBeUndefined();
    }
  });
});

describe('the OpenAPI description', () => {
  it('documents use_tools on the message request body, defaulting to true', async () => {
    const { app } = await setUp();
    const doc = (await (await fetch(`${app.url('main')}/openapi.json`)).json()) as {
      components: { schemas: Record<string, { properties: Record<string, Json>; required?: string[] }> };
    };
    const request = doc.components.schemas.McpMessageRequest!;
    expect(request.properties.use_tools).toMatchObject({ type: 'boolean', default: true });
    expect(request.properties.use_tools!.description).toEqual(expect.stringContaining('tools'));
    expect(request.required ?? []).not.toContain('use_tools');
  });
});
