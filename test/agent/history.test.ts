import { describe, expect, it } from 'vitest';
import { createOfflineLlm } from '../../src/adapters/llm/offline.js';
import type { AgentTurn, MessageResponse } from '../../src/modules/agent/agent.port.js';
import type { Caller } from '../../src/ports/caller.js';
import { createAgent } from '../../workflows/agent.js';
import { createCheckpointer } from '../../workflows/checkpointer.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, createUser } from '../helpers/auth.js';

// The real app's conversations and tools, and the real SQLite checkpointer, under an agent built here so that the
// test can count the checkpoint reads it makes. The offline model says how many earlier messages it was sent.

const closing = closeAfterEach();

const sees = (n: number) => `I see ${n} earlier messages in this conversation.`;

async function setUp() {
  const app = closing(await startTestApp({ ADMIN_PASSWORD }));
  const user = await createUser(app, 'alice');
  const caller: Caller = {
    kind: 'user',
    subject: `user:${user.id}`,
    username: 'alice',
    roles: [],
    sessionId: undefined,
    via: 'bearer',
  };
  const checkpointer = await createCheckpointer(app.infrastructure.db);
  const reads = { count: 0 };
  const getTuple = checkpointer.getTuple.bind(checkpointer);
  checkpointer.getTuple = (config) => {
    reads.count += 1;
    return getTuple(config);
  };
  const agent = createAgent({
    llm: createOfflineLlm(),
    conversations: app.services.conversations,
    tools: app.services.mcp.tools,
    checkpointer,
    logger: app.logger,
  });
  return { app, caller, agent, reads };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

/** Runs a turn; answers its response and how many checkpoint reads it made before the model's first words. */
async function turn(
  { agent, caller, reads }: Setup,
  message: string,
  conversationId?: string,
): Promise<{ response: MessageResponse; readsBeforeAnswer: number }> {
  const request: AgentTurn = { caller, message, mode: 'chat', ...(conversationId && { conversationId }) };
  let started = 0;
  let readsBeforeAnswer: number | undefined;
  for await (const event of agent.run(request)) {
    if (event.type === 'started') started = reads.count;
    if (event.type === 'delta') readsBeforeAnswer ??= reads.count - started;
    if (event.type === 'done') return { response: event.response, readsBeforeAnswer: readsBeforeAnswer ?? -1 };
  }
  throw new Error('the turn did not end with done');
}

/** What another instance's turn leaves: two more messages in the record, none in this agent's memory. */
async function turnElsewhere({ app, caller }: Setup, conversationId: string): Promise<void> {
  const conversation = await app.services.conversations.access(caller.subject, conversationId, 'owner');
  await app.services.conversations.append(conversation, [
    { role: 'user', content: 'Asked on another instance' },
    { role: 'assistant', content: 'Answered there' },
  ]);
}

describe("the agent's history at hand", () => {
  it("asks the model a conversation's next turn from what its last turn left, without reading the checkpoint", async () => {
    const setup = await setUp();
    const first = await turn(setup, 'The first question');
    expect(first.readsBeforeAnswer).toBe(1);

    const second = await turn(setup, 'The second question', first.response.conversation_id);
    expect(second.readsBeforeAnswer).toBe(0);
    expect(second.response.response).toContain(sees(2));
    const third = await turn(setup, 'The third question', first.response.conversation_id);
    expect(third.readsBeforeAnswer).toBe(0);
    expect(third.response.response).toContain(sees(4));
  });

  it('reads the conversation again once its record has grown elsewhere, and sends all of it', async () => {
    const setup = await setUp();
    const first = await turn(setup, 'The first question');
    const conversationId = first.response.conversation_id;
    await turnElsewhere(setup, conversationId);

    const next = await turn(setup, 'The next question', conversationId);
    expect(next.readsBeforeAnswer).toBe(1);
    expect(next.response.response).toContain(sees(4));
    const messages = await setup.app.services.conversations.messages(conversationId);
    expect(messages.map((m) => m.content).slice(0, 3)).toEqual([
      'The first question',
      first.response.response,
      'Asked on another instance',
    ]);
    expect(messages).toHaveLength(6);
  });

  it('lets go of a conversation it is told to forget', async () => {
    const setup = await setUp();
    const first = await turn(setup, 'The first question');
    setup.agent.forget(first.response.conversation_id);

    const next = await turn(setup, 'The next question', first.response.conversation_id);
    expect(next.readsBeforeAnswer).toBe(1);
    expect(next.response.response).toContain(sees(2));
  });
});
