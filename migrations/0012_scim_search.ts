import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../src/db/full-text.js';

/**
 * Indexes for SCIM's substring filters (`co`, `sw`, `ew`) and its default page order over many users.
 *
 * The attributes indexed for substrings, by the column a filter compares (see src/modules/scim/scim.store.ts):
 * userName (users.username_key), the primary email (users.email_key), name.formatted (users.name), externalId,
 * displayName, nickName, title, name.givenName and name.familyName (scim_users). The index only narrows the
 * candidates: the filter still compares every candidate exactly, so it never changes what a filter selects.
 *
 * SQLite: two FTS5 tables with the `trigram` tokenizer (case folded by FTS5; src/modules/scim/scim.search.ts
 * says when that folding is trusted): `users_search` for the columns of `users`, `users_search_scim` for those of
 * `scim_users`, each kept in step by triggers on its own table, so that rows written by any connection are indexed
 * in the same transaction, and adding a user only ever inserts (an FTS5 delete costs far more than an insert). Both
 * take their rowid from `users_search_rows` (an INTEGER PRIMARY KEY per user id), as the implicit rowid of `users`
 * may change on VACUUM. `secure-delete` removes a changed user's old trigrams rather than leaving them behind a
 * delete marker. (Not named `scim_*`: they index users, and go with them.)
 *
 * PostgreSQL: `pg_trgm` GIN indexes on the same columns as the filters compare them (lower-cased, except the
 * `*_key` columns, which are lower-case already, and the case-exact externalId). Where the extension cannot be
 * created, the migration leaves these indexes out and substring filters scan, as before.
 *
 * Both: an index on users (username_key, id), the default order of a page, so that skipping to a far page reads
 * that index alone.
 */

const USER_COLUMNS = ['username_key', 'email_key', 'name'] as const;
const SCIM_COLUMNS = ['external_id', 'display_name', 'nick_name', 'title', 'given_name', 'family_name'] as const;

/** PostgreSQL trigram indexes: name, table, indexed expression. */
const TRIGRAM_INDEXES: [string, string, string][] = [
  ['users_username_key_trgm', 'users', 'username_key'],
  ['users_email_key_trgm', 'users', 'email_key'],
  ['users_name_trgm', 'users', 'lower(name)'],
  ['scim_users_external_id_trgm', 'scim_users', 'external_id'],
  ...(['display_name', 'nick_name', 'title', 'given_name', 'family_name'] as const).map(
    (c): [string, string, string] => [`scim_users_${c}_trgm`, 'scim_users', `lower(${c})`],
  ),
];

/** The FTS5 tables, each with the table it indexes and the columns it holds. */
const SEARCH_TABLES = [
  { name: 'users_search', table: 'users', key: 'id', columns: USER_COLUMNS },
  { name: 'users_search_scim', table: 'scim_users', key: 'user_id', columns: SCIM_COLUMNS },
] as const;

type SearchTable = (typeof SEARCH_TABLES)[number];

/** Indexes the row `row` (`new`) of the search table's source table. */
function insertRow(t: SearchTable, row = 'new'): string {
  return `
      insert into ${t.name} (rowid, ${t.columns.join(', ')})
        select id, ${t.columns.map((c) => `${row}.${c}`).join(', ')} from users_search_rows where user_id = ${row}.${t.key};`;
}

/** Forgets the row of the search table for the user `id` (by default, that of the deleted row `old`). */
function deleteRow(t: SearchTable, id = `old.${t.key}`): string {
  return `
      delete from ${t.name} where rowid = (select id from users_search_rows where user_id = ${id});`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('users_username_key_id').on('users').columns(['username_key', 'id']).execute();
  if (isPostgres(db)) {
    // A failed statement aborts the migration's transaction: try the extension behind a savepoint.
    await sql`savepoint scim_trigram`.execute(db);
    try {
      await sql`create extension if not exists pg_trgm`.execute(db);
    } catch {
      await sql`rollback to savepoint scim_trigram`.execute(db);
      return;
    }
    await sql`release savepoint scim_trigram`.execute(db);
    for (const [name, table, expression] of TRIGRAM_INDEXES) {
      await sql`create index ${sql.id(name)} on ${sql.table(table)} using gin ((${sql.raw(expression)}) gin_trgm_ops)`.execute(
        db,
      );
    }
    return;
  }
  await sql`create table users_search_rows (id integer primary key, user_id text not null unique)`.execute(db);
  await sql`insert into users_search_rows (user_id) select id from users order by id`.execute(db);
  for (const t of SEARCH_TABLES) {
    try {
      await sql`
        create virtual table ${sql.id(t.name)} using fts5(${sql.raw(t.columns.join(', '))}, tokenize = 'trigram')
      `.execute(db);
    } catch (error) {
      throw new Error('SQLite lacks the FTS5 trigram tokenizer (SQLite 3.34 or later) that SCIM filters need', {
        cause: error,
      });
    }
    await sql`insert into ${sql.id(t.name)} (${sql.id(t.name)}, rank) values ('secure-delete', 1)`.execute(db);
    await sql`
      insert into ${sql.id(t.name)} (rowid, ${sql.raw(t.columns.join(', '))})
      select r.id, ${sql.raw(t.columns.map((c) => `s.${c}`).join(', '))}
      from users_search_rows r join ${sql.table(t.table)} s on s.${sql.raw(t.key)} = r.user_id
    `.execute(db);
  }
  const [users, scim] = SEARCH_TABLES;
  await sql`
    create trigger users_search_insert after insert on users begin
      insert into users_search_rows (user_id) values (new.id);
      ${sql.raw(insertRow(users))}
    end`.execute(db);
  await sql`
    create trigger users_search_update after update of ${sql.raw(['id', ...USER_COLUMNS].join(', '))} on users begin
      ${sql.raw(deleteRow(users))}
      update users_search_rows set user_id = new.id where user_id = old.id and new.id <> old.id;
      ${sql.raw(insertRow(users))}
    end`.execute(db);
  // scim_users rows go with their user (ON DELETE CASCADE), whichever trigger runs first: this one clears both.
  await sql`
    create trigger users_search_delete after delete on users begin
      ${sql.raw(deleteRow(users))}
      ${sql.raw(deleteRow(scim, 'old.id'))}
      delete from users_search_rows where user_id = old.id;
    end`.execute(db);
  await sql`
    create trigger users_search_scim_insert after insert on scim_users begin
      ${sql.raw(insertRow(scim))}
    end`.execute(db);
  await sql`
    create trigger users_search_scim_update after update of ${sql.raw(['user_id', ...SCIM_COLUMNS].join(', '))}
    on scim_users begin
      ${sql.raw(deleteRow(scim))}
      ${sql.raw(insertRow(scim))}
    end`.execute(db);
  await sql`
    create trigger users_search_scim_delete after delete on scim_users begin
      ${sql.raw(deleteRow(scim))}
    end`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) {
    // The extension stays: something else may use it, and it holds no data.
    for (const [name] of TRIGRAM_INDEXES) await sql`drop index if exists ${sql.id(name)}`.execute(db);
  } else {
    for (const trigger of ['scim_delete', 'scim_update', 'scim_insert', 'delete', 'update', 'insert']) {
      await sql`drop trigger ${sql.id(`users_search_${trigger}`)}`.execute(db);
    }
    for (const t of SEARCH_TABLES) await sql`drop table ${sql.id(t.name)}`.execute(db);
    await sql`drop table users_search_rows`.execute(db);
  }
  await db.schema.dropIndex('users_username_key_id').execute();
}
