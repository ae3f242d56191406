import { type Kysely, sql } from 'kysely';
import { isPostgres, searchKey } from '../src/db/full-text.js';

/**
 * Ranked full-text search over messages. `messages.content_key` now holds each message's words as the search
 * indexes them (see src/db/full-text.ts); existing rows are rewritten here.
 *
 * SQLite: an FTS5 table `messages_search` holding the words of every user and assistant message, kept in step by
 * triggers. Its rowid comes from `messages_search_rows` (an INTEGER PRIMARY KEY per message id): the implicit rowid
 * of `messages` may change on VACUUM. `secure-delete` removes a deleted message's words from the index itself rather
 * than leaving them behind a delete marker.
 *
 * PostgreSQL: a generated `search_vector` column ('simple' configuration: no stemming, no stop words, like FTS5's
 * unicode61) for the same messages, with a GIN index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await rewriteContentKeys(db, searchKey);
  if (isPostgres(db)) {
    await sql`
      alter table messages add column search_vector tsvector generated always as (
        case when role in ('user', 'assistant') then to_tsvector('simple'::regconfig, content_key) end
      ) stored`.execute(db);
    await sql`create index messages_search_vector on messages using gin (search_vector)`.execute(db);
    return;
  }
  await sql`create table messages_search_rows (id integer primary key, message_id text not null unique)`.execute(db);
  try {
    await sql`
      create virtual table messages_search using fts5(
        body, tokenize = "unicode61 remove_diacritics 0 categories 'L* N* M*'"
      )`.execute(db);
  } catch (error) {
    throw new Error('SQLite lacks the FTS5 extension that conversation search needs', { cause: error });
  }
  await sql`insert into messages_search (messages_search, rank) values ('secure-delete', 1)`.execute(db);
  await sql`
    insert into messages_search_rows (message_id)
    select id from messages where role in ('user', 'assistant') order by created_at, id`.execute(db);
  await sql`
    insert into messages_search (rowid, body)
    select r.id, m.content_key from messages_search_rows r join messages m on m.id = r.message_id`.execute(db);
  await sql`
    create trigger messages_search_insert after insert on messages when new.role in ('user', 'assistant') begin
      insert into messages_search_rows (message_id) values (new.id);
      insert into messages_search (rowid, body)
        select id, new.content_key from messages_search_rows where message_id = new.id;
    end`.execute(db);
  await sql`
    create trigger messages_search_delete after delete on messages begin
      delete from messages_search where rowid = (select id from messages_search_rows where message_id = old.id);
      delete from messages_search_rows where message_id = old.id;
    end`.execute(db);
  await sql`
    create trigger messages_search_update after update of id, role, content_key on messages begin
      delete from messages_search where rowid = (select id from messages_search_rows where message_id = old.id);
      delete from messages_search_rows where message_id = old.id;
      insert into messages_search_rows (message_id) select new.id where new.role in ('user', 'assistant');
      insert into messages_search (rowid, body)
        select id, new.content_key from messages_search_rows where message_id = new.id;
    end`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop index messages_search_vector`.execute(db);
    await sql`alter table messages drop column search_vector`.execute(db);
  } else {
    await sql`drop trigger messages_search_update`.execute(db);
    await sql`drop trigger messages_search_delete`.execute(db);
    await sql`drop trigger messages_search_insert`.execute(db);
    await sql`drop table messages_search`.execute(db);
    await sql`drop table messages_search_rows`.execute(db);
  }
  // The substring search before this migration matched the lower-cased content.
  await rewriteContentKeys(db, (content) => content.toLowerCase());
}

/** Sets every message's content_key from its content, a page at a time. */
async function rewriteContentKeys(db: Kysely<unknown>, key: (content: string) => string): Promise<void> {
  const PAGE = 500;
  let after = '';
  for (;;) {
    const { rows } = await sql<{ id: string; content: string }>`
      select id, content from messages where id > ${after} order by id limit ${PAGE}`.execute(db);
    for (const row of rows) {
      await sql`update messages set content_key = ${key(row.content)} where id = ${row.id}`.execute(db);
    }
    if (rows.length < PAGE) return;
    after = rows.at(-1)!.id;
  }
}
