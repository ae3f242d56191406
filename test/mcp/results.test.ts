import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SignedIn, type TestClient, startTestClient } from '../helpers/client.js';
import { restoreGlobalWebSocketAfterEach, sdkTransports, socketUrl, stdioTransport } from '../helpers/mcp.js';

// Tool call results carry `isError` as a boolean on every wire, and a prompt argument naming a conversation the
// caller may not see is invalid params (-32602), or 404 on the REST-style endpoint. Checked with the official SDK
// client, whose result schema leaves `isError` undefined when the server leaves it out.

const UNKNOWN = 'no-such-conversation';

let service: TestClient;
let alice: SignedIn;
let bob: SignedIn;
/** One of bob's conversations, which alice may not see. */
let bobsConversation: string;

beforeAll(async () => {
  service = await startTestClient();
  alice = await service.as('alice');
  bob = await service.as('bob');
  const chat = await bob.post('/mcp/tools/call', {
    params: { name: 'chat', arguments: { query: 'bob’s private notes', use_tools: false } },
  });
  bobsConversation = (chat.body.structuredContent as { conversation_id: string }).conversation_id;
});
afterAll(() => service.close());
restoreGlobalWebSocketAfterEach();

const wires = Object.fromEntries(
  Object.entries(sdkTransports).map(([wire, transport]) => [wire, () => transport(service.app, alice.credentials)]),
) as Record<string, () => Transport>;

async function connected(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'results', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** Calls that succeed say `isError: false`; a tool's own failure and a refused argument say `true`. */
async function expectBooleanIsError(client: Client): Promise<void> {
  const found = await client.callTool({ name: 'search_web', arguments: { query: 'refresh token' } });
  expect(found.isError).toBe(false);
  const chat = await client.callTool({ name: 'chat', arguments: { query: 'hello', use_tools: false } });
  expect(chat.isError).toBe(false);
  const missing = await client.callTool({ name: 'conversation_get', arguments: { conversation_id: UNKNOWN } });
  expect(missing).toMatchObject({
    isError: true,
    content: [{ type: 'text', text: `Conversation ${UNKNOWN} not found` }],
  });
  const invalid = await client.callTool({ name: 'search_web', arguments: { query: 42 } });
  expect(invalid.isError).toBe(true);
}

/** A rejection's JSON-RPC error. */
async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof McpError)) throw new Error(`expected a JSON-RPC error, got ${String(error)}`);
  return error;
}

async function expectInvalidPromptArguments(client: Client, conversationId: string): Promise<void> {
  const error = await rpcError(
    client.getPrompt({ name: 'summarize_conversation', arguments: { conversation_id: conversationId } }),
  );
  expect(error.code).toBe(ErrorCode.InvalidParams);
  expect(error.message).toContain(`Conversation ${conversationId} not found`);
}

describe.each(Object.keys(wires))('over %s (official SDK client)', (wire) => {
  it('reports isError as a boolean on every tool call result', async () => {
    const client = await connected(wires[wire]!());
    try {
      await expectBooleanIsError(client);
    } finally {
      await client.close();
    }
  });

  it('answers summarize_conversation for an unknown or another user’s conversation with -32602', async () => {
    const client = await connected(wires[wire]!());
    try {
      await expectInvalidPromptArguments(client, UNKNOWN);
      await expectInvalidPromptArguments(client, bobsConversation);
    } finally {
      await client.close();
    }
  });

  it('answers resources/read of an unknown or another user’s conversation with -32002 (resource not found)', async () => {
    const client = await connected(wires[wire]!());
    try {
      for (const id of [UNKNOWN, bobsConversation]) {
        const error = await rpcError(client.readResource({ uri: `conversation://${id}` }));
        expect(error.code).toBe(-32002);
        expect(error.message).toContain(`Conversation ${id} not found`);
      }
    } finally {
      await client.close();
    }
  });
});

describe('over stdio (agent-service stdio, official SDK client)', () => {
  it('reports isError as a boolean and refuses an unknown conversation with -32602', async () => {
    const client = await connected(stdioTransport());
    try {
      await expectBooleanIsError(client);
      await expectInvalidPromptArguments(client, UNKNOWN);
    } finally {
      await client.close();
    }
  });
});

describe('the WebSocket short form {method, params}', () => {
  it('answers tools/call with a result whose isError is a boolean', async () => {
    const socket = new WebSocket(socketUrl(service.app), { headers: alice.credentials });
    const replies: Record<string, unknown>[] = [];
    socket.on('message', (data) => replies.push(JSON.parse((data as Buffer).toString()) as Record<string, unknown>));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    try {
      // The answer to one call (log notifications may come first).
      const send = async (params: Record<string, unknown>) => {
        const seen = replies.length;
        const answer = () => replies.slice(seen).find((r) => r.method === 'tools/call');
        socket.send(JSON.stringify({ method: 'tools/call', params }));
        for (let i = 0; i < 200 && !answer(); i++) await new Promise((r) => setTimeout(r, 10));
        return answer();
      };
      expect(await send({ name: 'search_web', arguments: { query: 'sessions' } })).toMatchObject({
        method: 'tools/call',
        result: { isError: false },
      });
      expect(await send({ name: 'conversation_get', arguments: { conversation_id: UNKNOWN } })).toMatchObject({
        method: 'tools/call',
        result: { isError: true },
      });
    } finally {
      socket.close();
    }
  });
});

describe('REST-style endpoints', () => {
  it('POST /mcp/tools/call answers isError false on success and true on a tool error', async () => {
    const tool = (name: string, args: Record<string, unknown>) =>
      alice.post('/mcp/tools/call', { params: { name, arguments: args } });
    const found = await tool('conversation_search', { query: 'anything' });
    expect(found.status).toBe(200);
    expect(found.body.isError).toBe(false);
    const missing = await tool('conversation_get', { conversation_id: UNKNOWN });
    expect(missing.status).toBe(200);
    expect(missing.body.isError).toBe(true);
  });

  it('POST /mcp/prompts/get and /mcp/resources/read answer 404 for an unknown or another user’s conversation', async () => {
    for (const conversationId of [UNKNOWN, bobsConversation]) {
      const res = await alice.post('/mcp/prompts/get', {
        method: 'prompts/get',
        params: { name: 'summarize_conversation', arguments: { conversation_id: conversationId } },
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: { code: expect.any(String) as unknown, message: `Conversation ${conversationId} not found` },
      });
    }
    for (const conversationId of [UNKNOWN, bobsConversation]) {
      const res = await alice.post('/mcp/resources/read', { params: { uri: `conversation://${conversationId}` } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: { code: expect.any(String) as unknown, message: `Conversation ${conversationId} not found` },
      });
    }
    // The owner gets it filled in.
    const own = await bob.post('/mcp/prompts/get', {
      params: { name: 'summarize_conversation', arguments: { conversation_id: bobsConversation } },
    });
    expect(own.status).toBe(200);
    expect(JSON.stringify(own.body.messages)).toContain('bob’s private notes');
  });
});
