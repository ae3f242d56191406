import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { type SignedIn, type TestClient, startTestClient } from '../helpers/client.js';
import { createPostgresDatabase, describeWithService, probePostgres } from '../helpers/services.js';

// The offline model says how many earlier messages it sees, so its answer shows what history the agent's
// LangGraph checkpoint handed it; the checkpoint tables show that the history came from the checkpointer.

interface Turn {
  response: string;
  conversation_id: string;
}

async function chat(user: SignedIn, query: string, conversationId?: string): Promise<Turn> {
  const res = await user.post('/mcp/tools/call', {
    method: 'tools/call',
    params: { name: 'chat', arguments: { query, ...(conversationId && { conversation_id: conversationId }) } },
  });
  expect(res.status).toBe(200);
  expect(res.body.isError).toBe(false);
  return res.body.structuredContent as Turn;
}

async function messagesOf(user: SignedIn, conversationId: string): Promise<[string, string][]> {
  const res = await user.post('/mcp/tools/call', {
    method: 'tools/call',
    params: { name: 'conversation_get', arguments: { conversation_id: conversationId } },
  });
  expect(res.status).toBe(200);
  const { messages } = res.body.structuredContent as { messages: { role: string; content: string }[] };
  return messages.map((m) => [m.role, m.content]);
}

const sees = (n: number) => `I see ${n} earlier messages in this conversation.`;

/** The messages of a conversation of these questions and the turns that answered them. */
const transcript = (...turns: [string, Turn][]) =>
  turns.flatMap(([question, turn]) => [
    ['user', question],
    ['assistant', turn.response],
  ]);

describe('a conversation started before a restart continues after it (SQLite file)', () => {
  let dir: string;
  const closing = closeAfterEach();
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-restart-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('continues the conversation by id with every earlier turn', async () => {
    const file = join(dir, 'agent.db');
    const env = { DATABASE_URL: `sqlite:${file}` };

    const before = closing(await startTestClient(env));
    let alice = await before.as('alice');
    const first = await chat(alice, 'First question');
    expect(first.response).toContain('I see 0 earlier messages in this conversation.');
    const second = await chat(alice, 'Second question', first.conversation_id);
    expect(second.response).toContain(sees(2));
    await before.close();

    // Written by the checkpointer into the service's own file, not kept in the closed process.
    const raw = new SQLite(file, { readonly: true });
    try {
      const { n } = raw
        .prepare('select count(*) as n from checkpoints where thread_id = ?')
        .get(first.conversation_id) as { n: number };
      expect(n).toBeGreaterThan(0);
    } finally {
      raw.close();
    }

    const after = closing(await startTestClient(env));
    alice = await after.as('alice');
    const third = await chat(alice, 'Third question', first.conversation_id);
    expect(third).toMatchObject({ conversation_id: first.conversation_id });
    expect(third.response).toContain('you said "Third question"');
    expect(third.response).toContain(sees(4));

    expect(await messagesOf(alice, first.conversation_id)).toEqual(
      transcript(['First question', first], ['Second question', second], ['Third question', third]),
    );
  });
});

describeWithService(
  'a conversation continues across instances on one PostgreSQL database',
  await probePostgres(),
  () => {
    let database: { url: string; drop: () => Promise<void> };
    const instances: TestClient[] = [];
    beforeAll(async () => {
      database = await createPostgresDatabase();
    });
    afterAll(async () => {
      await Promise.all(instances.splice(0).map((instance) => instance.close()));
      await database?.drop();
    });

    it('continues on a second instance, and back on the first, with every earlier turn', async () => {
      const env = { DATABASE_URL: database.url };
      const one = await startTestClient(env);
      instances.push(one);
      const aliceOnOne = await one.as('alice');
      const first = await chat(aliceOnOne, 'First question');
      const second = await chat(aliceOnOne, 'Second question', first.conversation_id);
      expect(second.response).toContain(sees(2));

      // Started while the first still runs: both share the database, and so the checkpoints.
      const two = await startTestClient(env);
      instances.push(two);
      const aliceOnTwo = await two.as('alice');
      const third = await chat(aliceOnTwo, 'Third question', first.conversation_id);
      expect(third.response).toContain(sees(4));
      const fourth = await chat(aliceOnOne, 'Fourth question', first.conversation_id);
      expect(fourth.response).toContain(sees(6));

      const expected = transcript(
        ['First question', first],
        ['Second question', second],
        ['Third question', third],
        ['Fourth question', fourth],
      );
      expect(await messagesOf(aliceOnTwo, first.conversation_id)).toEqual(expected);
      expect(await messagesOf(aliceOnOne, first.conversation_id)).toEqual(expected);

      // The PostgreSQL checkpointer keeps its tables in its own schema, apart from the service's.
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const tables = await client.query<{ table_name: string }>(
          "select table_name from information_schema.tables where table_schema = 'langgraph'",
        );
        expect(tables.rows.map((r) => r.table_name)).toEqual(
          expect.arrayContaining(['checkpoints', 'checkpoint_blobs', 'checkpoint_writes', 'checkpoint_migrations']),
        );
        const checkpoints = await client.query<{ n: string }>(
          'select count(*) as n from langgraph.checkpoints where thread_id = $1',
          [first.conversation_id],
        );
        expect(Number(checkpoints.rows[0]!.n)).toBeGreaterThan(0);
      } finally {
        await client.end();
      }
    });
  },
);
