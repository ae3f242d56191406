import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { PASSWORD, call, createUser } from '../helpers/auth.js';
import { createPostgresDatabase, describeWithService, probePostgres } from '../helpers/services.js';

// The offline model says how many earlier messages it sees, so its answer shows what history the agent's
// LangGraph checkpoint handed it; the checkpoint tables show that the history came from the checkpointer.

const ADMIN_PASSWORD = 'bootstrap-secret-1';

interface Turn {
  response: string;
  conversation_id: string;
}

async function login(app: App): Promise<string> {
  const res = await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

async function chat(app: App, token: string, query: string, conversationId?: string): Promise<Turn> {
  const res = await call(app, 'POST', '/mcp/tools/call', {
    token,
    body: {
      method: 'tools/call',
      params: { name: 'chat', arguments: { query, ...(conversationId && { conversation_id: conversationId }) } },
    },
  });
  expect(res.status).toBe(200);
  expect(res.body.isError).toBe(false);
  return res.body.structuredContent as Turn;
}

async function messagesOf(app: App, token: string, conversationId: string): Promise<[string, string][]> {
  const res = await call(app, 'POST', '/mcp/tools/call', {
    token,
    body: {
      method: 'tools/call',
      params: { name: 'conversation_get', arguments: { conversation_id: conversationId } },
    },
  });
  expect(res.status).toBe(200);
  const { messages } = res.body.structuredContent as { messages: { role: string; content: string }[] };
  return messages.map((m) => [m.role, m.content]);
}

const sees = (n: number) => `I see ${n} earlier messages in this conversation.`;

describe('a conversation started before a restart continues after it (SQLite file)', () => {
  let dir: string;
  const apps: App[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-restart-'));
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('continues the conversation by id with every earlier turn', async () => {
    const file = join(dir, 'agent.db');
    const env = { DATABASE_URL: `sqlite:${file}`, ADMIN_PASSWORD };

    const before = await startTestApp(env);
    apps.push(before);
    await createUser(before, 'alice');
    let token = await login(before);
    const first = await chat(before, token, 'First question');
    expect(first.response).toContain('I see 0 earlier messages in this conversation.');
    const second = await chat(before, token, 'Second question', first.conversation_id);
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

    const after = await startTestApp(env);
    apps.push(after);
    token = await login(after);
    const third = await chat(after, token, 'Third question', first.conversation_id);
    expect(third).toMatchObject({ conversation_id: first.conversation_id });
    expect(third.response).toContain('you said "Third question"');
    expect(third.response).toContain(sees(4));

    expect(await messagesOf(after, token, first.conversation_id)).toEqual([
      ['user', 'First question'],
      ['assistant', first.response],
      ['user', 'Second question'],
      ['assistant', second.response],
      ['user', 'Third question'],
      ['assistant', third.response],
    ]);
  });
});

describeWithService(
  'a conversation continues across instances on one PostgreSQL database',
  await probePostgres(),
  () => {
    let database: { url: string; drop: () => Promise<void> };
    const apps: App[] = [];
    beforeAll(async () => {
      database = await createPostgresDatabase();
    });
    afterAll(async () => {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await database?.drop();
    });

    it('continues on a second instance, and back on the first, with every earlier turn', async () => {
      const env = { DATABASE_URL: database.url, ADMIN_PASSWORD };
      const one = await startTestApp(env);
      apps.push(one);
      await createUser(one, 'alice');
      const tokenOne = await login(one);
      const first = await chat(one, tokenOne, 'First question');
      const second = await chat(one, tokenOne, 'Second question', first.conversation_id);
      expect(second.response).toContain(sees(2));

      // Started while the first still runs: both share the database, and so the checkpoints.
      const two = await startTestApp(env);
      apps.push(two);
      const tokenTwo = await login(two);
      const third = await chat(two, tokenTwo, 'Third question', first.conversation_id);
      expect(third.response).toContain(sees(4));
      const fourth = await chat(one, tokenOne, 'Fourth question', first.conversation_id);
      expect(fourth.response).toContain(sees(6));

      const expected = [
        ['user', 'First question'],
        ['assistant', first.response],
        ['user', 'Second question'],
        ['assistant', second.response],
        ['user', 'Third question'],
        ['assistant', third.response],
        ['user', 'Fourth question'],
        ['assistant', fourth.response],
      ];
      expect(await messagesOf(two, tokenTwo, first.conversation_id)).toEqual(expected);
      expect(await messagesOf(one, tokenOne, first.conversation_id)).toEqual(expected);

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
