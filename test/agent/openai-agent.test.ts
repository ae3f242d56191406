import { describe, expect, it } from 'vitest';
import { createOpenAiLlm } from '../../src/adapters/llm/openai.js';
import { ServiceUnavailableError } from '../../src/errors.js';
import { runToCompletion } from '../../src/modules/agent/agent.port.js';
import type { Caller } from '../../src/ports/caller.js';
import { createAgent } from '../../workflows/agent.js';
import { createCheckpointer } from '../../workflows/checkpointer.js';
import { closeAfterEach } from '../helpers/app.js';
import { TestClock } from '../helpers/auth.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';

// The whole service with LLM_PROVIDER=openai, pointed at a FAKE of a hosted OpenAI-compatible API
// (test/fakes/openai.ts): no hosted model can run here. Everything else is real — REST endpoint, MCP server,
// policy point, LangGraph agent and its SQLite checkpointer, the `openai` client over real HTTP.

const MODEL = 'gpt-4o-mini-fake';

const closing = closeAfterEach();

async function setUp() {
  const fake = closing(await startFakeOpenAi([MODEL]));
  const { app, as } = closing(
    await startTestClient({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: MODEL,
      LLM_API_KEY: 'sk-fake-key',
    }),
  );
  return { fake, app, alice: await as('alice') };
}

interface MessageResponse {
  response: string;
  conversation_id: string;
  model: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

const toolCall = (caller: SignedIn, name: string, args: Json) =>
  caller.post('/mcp/tools/call', { method: 'tools/call', params: { name, arguments: args } });

async function agentChat(caller: SignedIn, args: Json): Promise<MessageResponse> {
  const res = await toolCall(caller, 'agent_chat', args);
  expect(res.status).toBe(200);
  expect(res.body.isError).toBe(false);
  return res.body.structuredContent as MessageResponse;
}

/** The assistant message of a model that asked for one tool call, as the next request sends it back. */
function askedFor(id: string, name: string, args: Json): Json {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  };
}

/** The chat-completion request bodies the fake received, in order. */
function chatBodies(fake: FakeOpenAi): { model: string; messages: Json[]; tools?: unknown[] }[] {
  return fake.requests
    .filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions')
    .map((r) => r.body as { model: string; messages: Json[]; tools?: unknown[] });
}

describe('the agent through POST /mcp/tools/call with an OpenAI-compatible model (fake)', () => {
  it('runs the tool the model asks for, feeds its output back, and reports the model and the summed usage', async () => {
    const { fake, alice } = await setUp();
    fake.replies.push({ text: 'Noted.', usage: { prompt_tokens: 20, completion_tokens: 2 } });
    const earlier = await agentChat(alice, { message: 'Remember the pineapple protocol' });
    // What conversation_search answers now is what the agent's tool call must feed back to the model.
    const direct = await toolCall(alice, 'conversation_search', { query: 'pineapple' });
    const expectedOutput = (direct.body.content as { text: string }[])[0]!.text;
    expect(expectedOutput).toContain(earlier.conversation_id);

    fake.replies.push(
      {
        toolCalls: [{ id: 'call_pine_1', name: 'conversation_search', arguments: { query: 'pineapple' } }],
        usage: { prompt_tokens: 120, completion_tokens: 9 },
      },
      { text: 'You mentioned the pineapple protocol.', usage: { prompt_tokens: 180, completion_tokens: 6 } },
    );
    const answer = await agentChat(alice, { message: 'What did I say about pineapples?' });

    expect(answer).toEqual({
      response: 'You mentioned the pineapple protocol.',
      conversation_id: expect.any(String) as unknown,
      model: MODEL,
      usage: { prompt_tokens: 300, completion_tokens: 15, total_tokens: 315 },
    });
    const bodies = chatBodies(fake);
    expect(bodies).toHaveLength(3);
    expect(bodies.every((b) => b.model === MODEL)).toBe(true);
    const [, first, second] = bodies;
    expect(first!.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(second!.messages.slice(1)).toEqual([
      { role: 'user', content: 'What did I say about pineapples?' },
      askedFor('call_pine_1', 'conversation_search', { query: 'pineapple' }),
      { role: 'tool', tool_call_id: 'call_pine_1', content: expectedOutput },
    ]);

    const got = await toolCall(alice, 'conversation_get', { conversation_id: answer.conversation_id });
    const stored = got.body.structuredContent as { messages: Json[]; usage: Json };
    expect(stored.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored.usage).toEqual(answer.usage);
  });

  it('sends the earlier turns of the conversation on the next turn', async () => {
    const { fake, alice } = await setUp();
    fake.replies.push(
      { toolCalls: [{ id: 'call_web_1', name: 'search_web', arguments: { query: 'refresh token reuse' } }] },
      { text: 'Reuse revokes the family.' },
    );
    const first = await agentChat(alice, { message: 'How is refresh token reuse handled?' });
    const toolOutput = chatBodies(fake)[1]!.messages.at(-1)!.content as string;
    expect(toolOutput).toMatch(/^1\. Agent Service documentation: /);

    fake.replies.push({ text: 'As I said.' });
    const second = await agentChat(alice, { message: 'Say it again', conversation_id: first.conversation_id });

    expect(second).toMatchObject({ response: 'As I said.', conversation_id: first.conversation_id });
    const last = chatBodies(fake).at(-1)!;
    expect(last.messages.slice(1)).toEqual([
      { role: 'user', content: 'How is refresh token reuse handled?' },
      askedFor('call_web_1', 'search_web', { query: 'refresh token reuse' }),
      { role: 'tool', tool_call_id: 'call_web_1', content: toolOutput },
      { role: 'assistant', content: 'Reuse revokes the family.' },
      { role: 'user', content: 'Say it again' },
    ]);
  });

  it('retries a 429 from the provider once and the turn succeeds', async () => {
    const { fake, alice } = await setUp();
    fake.failWith = 429;
    fake.failTimes = 1;
    fake.replies.push({ text: 'Made it.' });

    const answer = await agentChat(alice, { message: 'Are you busy?' });

    expect(answer.response).toBe('Made it.');
    const bodies = chatBodies(fake);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toEqual(bodies[0]);
  });

  it('stops calling a provider that keeps failing for a while, then calls it again', async () => {
    const fake = closing(await startFakeOpenAi([MODEL]));
    // The breaker's cool-down is judged by this clock.
    const clock = new TestClock(Date.now());
    const { as } = closing(
      await startTestClient(
        { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: MODEL, LLM_API_KEY: 'sk-fake-key' },
        { now: clock.now },
      ),
    );
    const alice = await as('alice');
    fake.failWith = 500;
    const failed = await toolCall(alice, 'agent_chat', { message: 'Anyone there?' });
    expect(failed.body).toMatchObject({ isError: true });
    const asked = fake.requests.length;
    expect(asked).toBeGreaterThan(0);

    const meanwhile = await toolCall(alice, 'agent_chat', { message: 'Still nobody?' });
    expect(meanwhile.body).toMatchObject({ isError: true });
    expect(JSON.stringify(meanwhile.body)).toContain('LLM provider is unavailable');
    expect(fake.requests.length).toBe(asked);

    fake.failWith = undefined;
    clock.advance(1_000);
    fake.replies.push({ text: 'Back again.' });
    expect((await agentChat(alice, { message: 'Now?' })).response).toBe('Back again.');
  });

  it('fails a turn with a clear error when the provider does not answer within the client timeout', async () => {
    const { fake, app } = await setUp();
    fake.delayMs = 60_000; // the fake's close() ends the wait
    const user = await app.services.users.getByUsername('alice');
    const agent = createAgent({
      llm: createOpenAiLlm({ baseUrl: fake.url, model: MODEL, timeoutMs: 200, maxRetries: 0 }),
      conversations: app.services.conversations,
      tools: app.services.mcp.tools,
      checkpointer: await createCheckpointer(app.infrastructure.db),
      logger: app.logger,
    });
    const caller: Caller = {
      kind: 'user',
      subject: `user:${user!.id}`,
      username: 'alice',
      roles: [],
      sessionId: undefined,
      via: 'bearer',
    };

    const turn = runToCompletion(agent, { caller, message: 'Anyone there?', mode: 'agent' });

    await expect(turn).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(turn).rejects.toThrow('LLM provider did not answer within 200 ms');
    expect(chatBodies(fake)).toHaveLength(1);
    const [conversation] = await app.services.conversations.list(`user:${user!.id}`, { offset: 0, limit: 10 });
    expect(conversation).toMatchObject({ messageCount: 0 });
  });
});
