import { type Kysely, Migrator, sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MIGRATIONS } from '../../migrations/index.js';
import type { AuthzService } from '../../src/adapters/authz/port.js';
import type { App } from '../../src/app.js';
import { createDb } from '../../src/db/create-db.js';
import type { Database } from '../../src/db/database.js';
import {
  ConversationsService,
  type NewMessage,
  type SearchHit,
} from '../../src/modules/conversations/conversations.service.js';
import { searchWords } from '../../src/db/full-text.js';
import { type TestClock, accessToken, call, createUser, startWithTwoUsers } from '../helpers/auth.js';
import type { Dialect, TestDatabase } from '../helpers/databases.js';
import { describeWithService } from '../helpers/services.js';

/**
 * What conversation search must do on every store: the same fixtures give the same hits in the same order on
 * SQLite (FTS5, bm25) and PostgreSQL (tsvector, ts_rank). Run once per dialect by conversation-search.test.ts.
 */
export function conversationSearchContract(dialect: Dialect): void {
  describeWithService(`conversation search on ${dialect.name}`, dialect.availability, () => {
    let database: TestDatabase;
    let app: App;
    let clock: TestClock;
    let alice: string;
    let aliceToken: string;
    /** Fixture label → message id. */
    const ids = new Map<string, string>();
    const labelOf = (hit: SearchHit) => [...ids].find(([, id]) => id === hit.messageId)?.[0] ?? hit.messageId;
    const search = async (query: string, limit = 50) =>
      (await app.services.conversations.search(alice, query, limit)).map(labelOf);

    /** Appends one message per label, a second apart, so that "newest" is well defined. */
    async function say(owner: string, title: string, messages: [label: string, message: NewMessage][]) {
      const conversation = await app.services.conversations.create(owner, title);
      for (const [label, message] of messages) {
        clock.advance(1_000);
        await app.services.conversations.append(conversation, [message]);
        const stored = await app.services.conversations.messages(conversation.id);
        ids.set(label, stored.at(-1)!.id);
      }
      return conversation;
    }

    async function indexed(word: string): Promise<number> {
      const { rows } =
        dialect.name === 'postgres'
          ? await sql<{ n: number }>`
              select count(*) as n from messages
              where search_vector @@ plainto_tsquery('simple', ${word})`.execute(app.infrastructure.db.kysely)
          : await sql<{ n: number }>`
              select count(*) as n from messages_search where messages_search match ${`"${word}"`}`.execute(
              app.infrastructure.db.kysely,
            );
      return Number(rows[0]!.n);
    }

    beforeAll(async () => {
      database = await dialect.createMigrated();
      const started = await startWithTwoUsers(
        (made) => {
          app = made;
        },
        { DATABASE_URL: database.url },
      );
      clock = started.clock;
      aliceToken = started.alice;
      alice = `user:${(await app.services.users.getByUsername('alice'))!.id}`;
      const bob = `user:${(await app.services.users.getByUsername('bob'))!.id}`;

      // Oldest first: ranking, not age, must decide the order.
      await say(alice, 'Release planning', [
        ['thrice', { role: 'user', content: 'Deploy it, deploy it, DEPLOY it.' }],
        ['twice', { role: 'assistant', content: 'We deploy it and deploy them.' }],
        ['once-short', { role: 'user', content: 'When do we deploy the release?' }],
        ['once-long', { role: 'assistant', content: 'The migration runs before every deploy of the service, always.' }],
        ['once-short-newer', { role: 'user', content: 'Why did the deploy fail again?' }],
        ['tool', { role: 'tool', content: 'deploy deploy deploy', toolCallId: 'call-1', name: 'search_web' }],
        ['system', { role: 'system', content: 'deploy deploy deploy' }],
      ]);
      await say(alice, 'Fridays', [
        ['both-twice', { role: 'user', content: 'deploy on Friday, deploy on Friday' }],
        ['both-once', { role: 'assistant', content: 'Never deploy on a rainy Friday.' }],
        ['friday-only', { role: 'user', content: 'Friday is our pizza day, yes.' }],
      ]);
      await say(alice, 'Words', [
        ['cafe-accent', { role: 'user', content: 'Meet at the CAFÉ, then mail alice@example.com.' }],
        ['cafe-plain', { role: 'user', content: 'The cafe opens at eight: https://example.org/menu?day=1' }],
        ['greek', { role: 'user', content: 'ΣΊΣΥΦΟΣ pushes the stone; state-of-the-art 1e5abc and x².' }],
        ['cjk', { role: 'assistant', content: '東京タワー is tall; the token_count is 3.14.' }],
        ['syntax', { role: 'user', content: 'Use NEAR and OR in "quotes" with col:value and a* (not -this).' }],
      ]);
      await say(bob, 'Bob deploys', [['bob', { role: 'user', content: 'deploy deploy deploy Friday cafe' }]]);
    });

    afterAll(async () => {
      await app?.close();
      await database?.cleanup();
    });

    it('ranks by how often a word occurs and how short the message is, then newest first', async () => {
      // Six words each, but for the last: three, two (newest first), one (newest first) and one in ten.
      expect(await search('deploy')).toEqual([
        'thrice',
        'both-twice',
        'twice',
        'both-once',
        'once-short-newer',
        'once-short',
        'once-long',
      ]);
    });

    it('answers the best hits up to the limit, the same again with another limit', async () => {
      expect(await search('deploy', 1)).toEqual(['thrice']);
      expect(await search('deploy', 3)).toEqual(['thrice', 'both-twice', 'twice']);
      expect(await search('deploy', 1)).toEqual(['thrice']);
    });

    it('finds only messages with every word, case-insensitively, best match first', async () => {
      expect(await search('DEPLOY friday')).toEqual(['both-twice', 'both-once']);
      expect(await search('friday Deploy')).toEqual(['both-twice', 'both-once']);
      expect(await search('friday')).toEqual(['both-twice', 'friday-only', 'both-once']);
      expect(await search('deploy friday pizza')).toEqual([]);
      expect(await search('deploy', 2)).toEqual(['thrice', 'both-twice']);
    });

    it('matches whole words, accents kept, as both stores cut them', async () => {
      expect(await search('café')).toEqual(['cafe-accent']);
      expect(await search('Cafe')).toEqual(['cafe-plain']);
      expect(await search('caf')).toEqual([]);
      expect(await search('example')).toEqual(['cafe-accent', 'cafe-plain']);
      expect(await search('alice example com')).toEqual(['cafe-accent']);
      expect(await search('menu day 1')).toEqual(['cafe-plain']);
      expect(await search('σίσυφος')).toEqual(['greek']);
      expect(await search('Σίσυφος art 1e5 abc x')).toEqual(['greek']);
      expect(await search('東京タワー')).toEqual(['cjk']);
      expect(await search('token count 3 14')).toEqual(['cjk']);
      expect(searchWords('ΣΊΣΥΦΟΣ state-of-the-art 1e5abc x²')).toEqual([
        'σίσυφοσ',
        'state',
        'of',
        'the',
        'art',
        '1e5',
        'abc',
        'x',
      ]);
    });

    it('reads nothing in the query as search syntax', async () => {
      const hostile: [string, string[]][] = [
        ['"deploy', ['thrice', 'both-twice', 'twice', 'both-once', 'once-short-newer', 'once-short', 'once-long']],
        ['deploy* friday"', ['both-twice', 'both-once']],
        ['friday:*', ['both-twice', 'friday-only', 'both-once']],
        ['body:friday', []],
        ['NEAR(deploy friday)', []],
        ['near OR quotes', ['syntax']],
        ['"NEAR" "OR"', ['syntax']],
        ['col:value a* -this', ['syntax']],
        ['not this', ['syntax']],
        ['deploy -friday', ['both-twice', 'both-once']],
        ['deploy AND NOT friday', []],
        ['(friday) & !pizza | deploy <-> x', []],
        ["friday' & 'pizza", ['friday-only']],
        ['{friday} ^pizza', ['friday-only']],
        ['% _ \\ \' " * : ( ) & | ! <-> ^ + - ~ @@', []],
        ['\u0000friday\u0000', ['both-twice', 'friday-only', 'both-once']],
        ['', []],
        ['   ', []],
        ['friday '.repeat(400), ['both-twice', 'friday-only', 'both-once']],
        [`friday ${'x'.repeat(300)}`, []],
        [`${'x'.repeat(5_000)}`, []],
        ['😀 ½', []],
      ];
      for (const [query, expected] of hostile) {
        expect(await search(query), JSON.stringify(query)).toEqual(expected);
      }
    });

    it('answers hostile queries over the MCP tool with matches or none, never an error', async () => {
      for (const query of ['"deploy" OR NEAR(a b) *', "friday' | !", 'friday:*', '\\']) {
        const res = await call(app, 'POST', '/mcp/tools/call', {
          token: aliceToken,
          body: { method: 'tools/call', params: { name: 'conversation_search', arguments: { query } } },
        });
        expect(res.status, query).toBe(200);
        expect(res.body.isError, query).toBe(false);
      }
      const res = await call(app, 'POST', '/mcp/tools/call', {
        token: aliceToken,
        body: {
          method: 'tools/call',
          params: { name: 'conversation_search', arguments: { query: 'Deploy, Friday!' } },
        },
      });
      const { matches } = res.body.structuredContent as { matches: { message_id: string; snippet: string }[] };
      expect(matches.map((m) => m.message_id)).toEqual([ids.get('both-twice'), ids.get('both-once')]);
      expect(matches[1]!.snippet).toBe('Never deploy on a rainy Friday.');
    });

    it("searches only the caller's own user and assistant messages", async () => {
      const hits = await app.services.conversations.search(alice, 'deploy', 50);
      expect(hits.map(labelOf)).not.toContain('bob');
      expect(hits.map((h) => h.role).sort()).toEqual([
        'assistant',
        'assistant',
        'assistant',
        'user',
        'user',
        'user',
        'user',
      ]);
      expect(hits[0]).toEqual({
        conversationId: expect.any(String) as unknown,
        title: 'Release planning',
        messageId: ids.get('thrice'),
        role: 'user',
        snippet: 'Deploy it, deploy it, DEPLOY it.',
        createdAt: expect.stringMatching(/^2026-06-01T12:00:\d\d\.000Z$/) as unknown,
      });
      const bob = `user:${(await app.services.users.getByUsername('bob'))!.id}`;
      expect((await app.services.conversations.search(bob, 'deploy cafe', 50)).map(labelOf)).toEqual(['bob']);
      expect(await app.services.conversations.search('user:nobody', 'deploy', 50)).toEqual([]);
    });

    it('appends to a conversation only for the owner it is named with: for another, a 404 that changes nothing', async () => {
      const { conversations } = app.services;
      const db = app.infrastructure.db.kysely;
      const owner = 'user:appending-owner';
      const theirs = await conversations.create(owner, 'Zzyzx notes');
      await conversations.append(theirs, [{ role: 'user', content: 'zzyzx first', promptTokens: 3 }]);
      const stored = async () => ({
        row: await db.selectFrom('conversations').selectAll().where('id', '=', theirs.id).executeTakeFirstOrThrow(),
        messages: await conversations.messages(theirs.id),
      });
      const before = await stored();
      expect(before.row).toMatchObject({ owner, message_count: 1, prompt_tokens: 3 });

      await expect(
        conversations.append({ id: theirs.id, owner: 'user:someone-else' }, [
          { role: 'assistant', content: 'zzyzx not theirs', completionTokens: 5 },
        ]),
      ).rejects.toMatchObject({ status: 404 });
      expect(await stored()).toEqual(before);
    });

    it('keeps the index in step when a message is changed or its conversation deleted', async () => {
      const scratch = await say(alice, 'Scratch', [['quokka', { role: 'user', content: 'A quokka smiles.' }]]);
      expect(await search('quokka')).toEqual(['quokka']);
      await app.infrastructure.db.kysely
        .updateTable('messages')
        .set({ content: 'A wombat digs.', content_key: searchWords('A wombat digs.').join(' ') })
        .where('id', '=', ids.get('quokka')!)
        .execute();
      expect(await search('quokka')).toEqual([]);
      expect(await search('wombat')).toEqual(['quokka']);
      expect(await indexed('quokka')).toBe(0);

      // The messages go with their conversation (a foreign-key cascade).
      await app.infrastructure.db.kysely.deleteFrom('conversations').where('id', '=', scratch.id).execute();
      expect(await search('wombat')).toEqual([]);
      expect(await indexed('wombat')).toBe(0);
    });

    it('forgets an erased user’s messages: the index no longer holds them', async () => {
      await createUser(app, 'erin');
      const erin = `user:${(await app.services.users.getByUsername('erin'))!.id}`;
      await say(erin, 'Secrets', [
        ['erin-1', { role: 'user', content: 'My zebracorn is called Zed.' }],
        ['erin-2', { role: 'assistant', content: 'A fine zebracorn name.' }],
      ]);
      expect((await app.services.conversations.search(erin, 'zebracorn', 10)).map(labelOf)).toEqual([
        'erin-2',
        'erin-1',
      ]);
      expect(await indexed('zebracorn')).toBe(2);

      const token = await accessToken(app, 'erin');
      const res = await call(app, 'DELETE', '/api/v1/users/me?confirm=true', { token });
      expect(res.status).toBe(200);

      expect(await app.services.conversations.search(erin, 'zebracorn', 10)).toEqual([]);
      expect(await indexed('zebracorn')).toBe(0);
      expect(await indexed('zed')).toBe(0);
      // Everyone else's messages are still found.
      expect(await search('pizza')).toEqual(['friday-only']);
    });
  });

  describeWithService(`conversation search index on ${dialect.name}: migration`, dialect.availability, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await dialect.create();
    });
    afterAll(async () => {
      await database?.cleanup();
    });

    it('indexes the messages stored before it, and reverts to the old keys when migrated down', async () => {
      const db = createDb(database.target);
      try {
        const migrator = new Migrator({
          db: db.kysely,
          provider: { getMigrations: () => Promise.resolve(MIGRATIONS) },
        });
        expect((await migrator.migrateTo('0007_data_subject')).error).toBeUndefined();
        await insertOldStyle(db.kysely);
        expect((await migrator.migrateToLatest()).error).toBeUndefined();

        // Search needs no authorization check: it reads the owner column.
        const conversations = new ConversationsService(
          db.kysely,
          {} as AuthzService,
          () => new Date('2026-02-01T00:00:00.000Z'),
        );
        const hits = await conversations.search('user:old', 'Legacy', 10);
        expect(hits.map((h) => h.messageId)).toEqual(['m2', 'm1']);
        const keys = await db.kysely.selectFrom('messages').select(['id', 'content_key']).orderBy('id').execute();
        expect(keys).toEqual([
          { id: 'm1', content_key: 'a legacy message from before the index' },
          { id: 'm2', content_key: 'legacy legacy legacy' },
          { id: 'm3', content_key: 'legacy tool output' },
        ]);
        // As good a match as m2, and newer.
        await conversations.append({ id: 'c1', owner: 'user:old' }, [
          { role: 'assistant', content: 'Legacy, LEGACY: legacy.' },
        ]);
        expect((await conversations.search('user:old', 'legacy', 10)).map((h) => h.messageId)).toEqual([
          expect.any(String),
          'm2',
          'm1',
        ]);

        // Back to before the index (and whatever came after it).
        expect((await migrator.migrateTo('0007_data_subject')).error).toBeUndefined();
        const restored = await db.kysely.selectFrom('messages').select('content_key').where('id', '=', 'm2').execute();
        expect(restored).toEqual([{ content_key: 'legacy, legacy; legacy!' }]);
        expect((await migrator.migrateToLatest()).error).toBeUndefined();
        expect((await conversations.search('user:old', 'legacy', 10)).length).toBe(3);
      } finally {
        await db.destroy();
      }
    });
  });
}

async function insertOldStyle(db: Kysely<Database>): Promise<void> {
  const at = '2026-01-01T00:00:00.000Z';
  await db
    .insertInto('conversations')
    .values({
      id: 'c1',
      owner: 'user:old',
      title: 'Old',
      message_count: 3,
      prompt_tokens: 0,
      completion_tokens: 0,
      created_at: at,
      updated_at: at,
      last_message_at: at,
    })
    .execute();
  const message = (id: string, seq: number, role: 'user' | 'tool', content: string) => ({
    id,
    conversation_id: 'c1',
    seq,
    role,
    content,
    content_key: content.toLowerCase(),
    tool_calls: null,
    tool_call_id: role === 'tool' ? 'call-1' : null,
    name: role === 'tool' ? 'search_web' : null,
    prompt_tokens: 0,
    completion_tokens: 0,
    created_at: at,
  });
  await db
    .insertInto('messages')
    .values([
      message('m1', 1, 'user', 'A legacy message from before the index'),
      message('m2', 2, 'user', 'Legacy, legacy; legacy!'),
      message('m3', 3, 'tool', 'Legacy tool output'),
    ])
    .execute();
}
