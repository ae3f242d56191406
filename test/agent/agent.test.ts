import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { NotFoundError } from '../../src/errors.js';
import type { AgentEvent, AgentTurn, MessageResponse } from '../../src/modules/agent/agent.port.js';
import type { Caller } from '../../src/ports/caller.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, createUser } from '../helpers/auth.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';

// The real app (SQLite, the real checkpointer, the real tool executor and policy point) with the offline model,
// or, where a test needs a model that behaves in a way the offline one never does, the FAKE OpenAI-compatible API
// of test/fakes/openai.ts (no hosted model can run here) through the real `openai` client.

const MODEL = 'fake-agent-model';

const closing = closeAfterEach();

async function setUp(env: Record<string, string> = {}) {
  const app = closing(await startTestApp({ ADMIN_PASSWORD, ...env }));
  return { app, alice: await callerFor(app, 'alice'), bob: await callerFor(app, 'bob') };
}

/** The app wired to the fake model instead of the offline one. */
async function setUpWithFake() {
  const fake = closing(await startFakeOpenAi([MODEL]));
  return { fake, ...(await setUp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: MODEL })) };
}

/** A user created through the users service, as the authentication middleware would present it. */
async function callerFor(app: App, username: string): Promise<Caller> {
  const user = await createUser(app, username);
  return { kind: 'user', subject: `user:${user.id}`, username, roles: [], sessionId: undefined, via: 'bearer' };
}

async function collect(app: App, turn: AgentTurn): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of app.services.agent.agent().run(turn)) events.push(event);
  return events;
}

function doneOf(events: AgentEvent[]): MessageResponse {
  const last = events.at(-1);
  if (last?.type !== 'done') throw new Error(`the turn did not end with done: ${JSON.stringify(last)}`);
  return last.response;
}

/** Runs the caller's turn to its end and answers its response. */
async function answer(
  app: App,
  caller: Caller,
  message: string,
  turn: Omit<AgentTurn, 'caller' | 'message'>,
): Promise<MessageResponse> {
  return doneOf(await collect(app, { caller, message, ...turn }));
}

/** The bodies of the chat-completion requests the fake received (start-up's model listing aside). */
function chatBodies(
  fake: FakeOpenAi,
): { messages: Record<string, unknown>[]; tools?: { function: { name: string } }[] }[] {
  return fake.requests
    .filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions')
    .map((r) => r.body as { messages: Record<string, unknown>[]; tools?: { function: { name: string } }[] });
}

describe('the agent with the offline model', () => {
  it('streams a chat turn: started, deltas that make up the answer, then done with consistent usage', async () => {
    const { app, alice } = await setUp();
    const events = await collect(app, { caller: alice, message: 'Hello agent, how are you today?', mode: 'chat' });

    expect(events[0]).toEqual({ type: 'started', conversationId: expect.any(String) as unknown });
    const conversationId = (events[0] as { conversationId: string }).conversationId;
    const deltas = events.slice(1, -1);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.every((e) => e.type === 'delta')).toBe(true);
    const response = doneOf(events);
    expect(deltas.map((e) => (e as { text: string }).text).join('')).toBe(response.response);
    expect(response.response).toMatch(/^Offline model: you said "Hello agent, how are you today\?"/);
    expect(response).toMatchObject({ conversation_id: conversationId, model: 'offline' });
    const { usage } = response;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBe(deltas.length);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);

    const messages = await app.services.conversations.messages(conversationId);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Hello agent, how are you today?'],
      ['assistant', response.response],
    ]);
    expect(messages.reduce((n, m) => n + m.promptTokens, 0)).toBe(usage.prompt_tokens);
    expect(messages.reduce((n, m) => n + m.completionTokens, 0)).toBe(usage.completion_tokens);
    const conversation = await app.services.conversations.access(alice.subject, conversationId);
    expect(conversation).toMatchObject({
      messageCount: 2,
      usage: {
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        totalTokens: usage.total_tokens,
      },
    });
  });

  it('calls search_web in agent mode by the offline tool rule and answers from its result', async () => {
    const { app, alice } = await setUp();
    const events = await collect(app, { caller: alice, message: 'please search for session cookie', mode: 'agent' });

    const kinds = events.map((e) => e.type);
    expect(kinds.slice(0, 3)).toEqual(['started', 'tool_call', 'tool_result']);
    expect(kinds.at(-1)).toBe('done');
    expect(events[1]).toEqual({ type: 'tool_call', name: 'search_web', args: { query: 'session cookie' } });
    const result = events[2] as Extract<AgentEvent, { type: 'tool_result' }>;
    expect(result).toMatchObject({ name: 'search_web', isError: false });
    // The embedded search finds the README's sections on sessions, so there is something to quote.
    expect(result.content).toMatch(/^1\. Agent Service documentation: /);
    const { response, conversation_id } = doneOf(events);
    const quoted = result.content.trim().slice(0, 60);
    expect(response).toContain(`the tool search_web returned "${quoted}`);
    expect(response).toContain('You asked: "please search for session cookie"');

    const messages = await app.services.conversations.messages(conversation_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[1]!.toolCalls).toEqual([
      { id: 'call_1', name: 'search_web', arguments: { query: 'session cookie' } },
    ]);
    expect(messages[2]).toMatchObject({ toolCallId: 'call_1', name: 'search_web', content: result.content });
    expect(messages[3]!.content).toBe(response);
  });

  it('cancels a turn mid-stream with an AbortError and records nothing of it', async () => {
    const { app, alice } = await setUp();
    const first = await answer(app, alice, 'The first question', { mode: 'chat' });
    const conversationId = first.conversation_id;

    const controller = new AbortController();
    const seen: AgentEvent[] = [];
    const run = async () => {
      for await (const event of app.services.agent.agent().run({
        caller: alice,
        message: 'A second question that will be cut short',
        conversationId,
        mode: 'chat',
        signal: controller.signal,
      })) {
        seen.push(event);
        if (event.type === 'delta') controller.abort();
      }
    };
    const error = await run().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('AbortError');
    // A delta already on its way may still arrive; what matters is that the turn never completes.
    expect(seen.slice(0, 2).map((e) => e.type)).toEqual(['started', 'delta']);
    expect(seen.map((e) => e.type)).not.toContain('done');

    const messages = await app.services.conversations.messages(conversationId);
    expect(messages.map((m) => m.content)).toEqual(['The first question', first.response]);
    // The next turn sees the conversation as recorded: the cancelled question is not part of it.
    const next = await answer(app, alice, 'The third question', { conversationId, mode: 'chat' });
    expect(next.response).toContain('I see 2 earlier messages in this conversation.');
  });

  it('will not continue a conversation of another user, and adds nothing to it', async () => {
    const { app, alice, bob } = await setUp();
    const bobs = await answer(app, bob, 'Bob’s private notes', { mode: 'chat' });

    const attempt = collect(app, {
      caller: alice,
      message: 'Let me in',
      conversationId: bobs.conversation_id,
      mode: 'chat',
    });
    await expect(attempt).rejects.toBeInstanceOf(NotFoundError);
    await expect(attempt).rejects.toThrow(`Conversation ${bobs.conversation_id} not found`);

    const messages = await app.services.conversations.messages(bobs.conversation_id);
    expect(messages.map((m) => m.content)).toEqual(['Bob’s private notes', bobs.response]);
    // Bob's own next turn sees only his own messages.
    const next = await answer(app, bob, 'Still mine?', { conversationId: bobs.conversation_id, mode: 'chat' });
    expect(next.response).toContain('I see 2 earlier messages in this conversation.');
  });
});

describe('the agent with a model behind the fake OpenAI-compatible API', () => {
  it('stops offering tools after maxSteps rounds and ends with a text answer', async () => {
    const { app, alice, fake } = await setUpWithFake();
    // A model that asks for a tool every time, even when it is offered none.
    for (let i = 0; i < 6; i++) {
      fake.replies.push({
        text: `Looking it up (${i + 1}).`,
        toolCalls: [{ id: `call_loop_${i + 1}`, name: 'search_web', arguments: { query: `round ${i + 1}` } }],
      });
    }
    const events = await collect(app, { caller: alice, message: 'Research forever', mode: 'agent', maxSteps: 2 });

    expect(events.filter((e) => e.type === 'tool_call')).toHaveLength(2);
    const bodies = chatBodies(fake);
    expect(bodies).toHaveLength(3);
    expect(bodies[0]!.tools?.map((t) => t.function.name)).toContain('search_web');
    expect(bodies[1]!.tools?.map((t) => t.function.name)).toContain('search_web');
    expect(bodies[2]).not.toHaveProperty('tools');
    expect(bodies[2]).not.toHaveProperty('tool_choice');

    const response = doneOf(events);
    expect(response.response).toBe('Looking it up (3).');
    const messages = await app.services.conversations.messages(response.conversation_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    // The last answer was given without tools, so it carries no tool call that nothing will ever answer.
    expect(messages.at(-1)).not.toHaveProperty('toolCalls');

    // The conversation stays valid for the API: the next turn's history is accepted (the fake rejects unanswered
    // tool calls with a 400, as the real API does).
    fake.replies.splice(0, fake.replies.length, { text: 'Done now.' });
    const next = await answer(app, alice, 'Enough', { conversationId: response.conversation_id, mode: 'chat' });
    expect(next.response).toBe('Done now.');
  });

  it('offers the model only the tools the caller may use', async () => {
    const { app, alice, fake } = await setUpWithFake();
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:search_web' }]);
    fake.replies.push({ text: 'No web for you.' });

    await answer(app, alice, 'What tools do you have?', { mode: 'agent' });

    const offered = chatBodies(fake)[0]!.tools?.map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['conversation_get', 'conversation_search']));
    expect(offered).not.toContain('search_web');
    // Nor the tools that run the agent itself.
    expect(offered).not.toContain('agent_chat');
    expect(offered).not.toContain('chat');
  });

  it('answers a call to a tool the model was not offered with a tool error, without running it', async () => {
    const { app, alice, fake } = await setUpWithFake();
    // agent_chat is one the caller may call, but it is never offered to the agent: run from the tool loop it
    // would start a nested agent turn (and conversation) of its own.
    fake.replies.push(
      { toolCalls: [{ id: 'call_sneaky', name: 'agent_chat', arguments: { message: 'recurse' } }] },
      { text: 'Fine.' },
      { text: 'A nested turn answered.' },
    );

    const events = await collect(app, { caller: alice, message: 'Ask yourself', mode: 'agent' });

    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ name: 'agent_chat', isError: true });
    expect(doneOf(events).response).toBe('Fine.');
    const bodies = chatBodies(fake);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]!.messages.find((m) => m.role === 'tool')).toMatchObject({
      tool_call_id: 'call_sneaky',
      content: expect.stringContaining('agent_chat') as unknown,
    });
    expect(await app.services.conversations.list(alice.subject, { offset: 0, limit: 10 })).toHaveLength(1);
  });

  it('cancels a turn while its tool runs and keeps the conversation usable', async () => {
    const { app, alice, fake } = await setUpWithFake();
    fake.replies.push({ text: 'Hello.' });
    const first = await answer(app, alice, 'Hi', { mode: 'agent' });
    fake.replies.push({ toolCalls: [{ id: 'call_cut', name: 'search_web', arguments: { query: 'cut short' } }] });

    const controller = new AbortController();
    const run = async () => {
      for await (const event of app.services.agent.agent().run({
        caller: alice,
        message: 'Search something',
        conversationId: first.conversation_id,
        mode: 'agent',
        signal: controller.signal,
      })) {
        if (event.type === 'tool_call') controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ name: 'AbortError' });
    expect((await app.services.conversations.messages(first.conversation_id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
    ]);

    fake.replies.push({ text: 'Still here.' });
    const next = await answer(app, alice, 'Are you there?', { conversationId: first.conversation_id, mode: 'agent' });
    expect(next.response).toBe('Still here.');
    // The model sees the conversation as recorded: no half turn, no unanswered tool call.
    const last = chatBodies(fake).at(-1)!;
    expect(last.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.any(String)],
      ['user', 'Hi'],
      ['assistant', 'Hello.'],
      ['user', 'Are you there?'],
    ]);
  });
});
