import SQLite from 'better-sqlite3';
import { type Generated, Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cachingStatements } from '../../src/db/statement-cache.js';

/** Compiled statements reused per SQL text, on a real in-memory better-sqlite3 database. */
describe('SQLite statement cache', () => {
  let raw: SQLite.Database;
  let prepared: string[];

  beforeEach(() => {
    raw = new SQLite(':memory:');
    raw.exec('create table t (id integer primary key, name text)');
    raw.exec("insert into t (name) values ('a'), ('b'), ('c')");
    prepared = [];
    const prepare = raw.prepare.bind(raw);
    raw.prepare = (source: string) => {
      prepared.push(source);
      return prepare(source);
    };
  });
  afterEach(() => {
    if (raw.open) raw.close();
  });

  it('compiles each SQL text once and hands back the same statement', () => {
    const db = cachingStatements(raw);
    const first = db.prepare('select name from t where id = ?');
    expect(first.all([1])).toEqual([{ name: 'a' }]);
    const again = db.prepare('select name from t where id = ?');
    expect(again).toBe(first);
    expect(again.all([2])).toEqual([{ name: 'b' }]);
    expect(prepared).toEqual(['select name from t where id = ?']);
  });

  it('keeps at most its capacity, letting the least recently used go', () => {
    const db = cachingStatements(raw, 2);
    const one = db.prepare('select 1');
    db.prepare('select 2');
    expect(db.prepare('select 1')).toBe(one); // now the most recently used
    db.prepare('select 3'); // evicts "select 2"
    expect(db.prepare('select 1')).toBe(one);
    db.prepare('select 2');
    expect(prepared).toEqual(['select 1', 'select 2', 'select 3', 'select 2']);
  });

  it('gives a second statement while the cached one is still being iterated', () => {
    const db = cachingStatements(raw);
    const streaming = db.prepare('select name from t order by id');
    const rows = streaming.iterate([]);
    expect(rows.next().value).toEqual({ name: 'a' });
    const meanwhile = db.prepare('select name from t order by id');
    expect(meanwhile).not.toBe(streaming);
    expect(meanwhile.all([])).toHaveLength(3);
    expect([...rows]).toEqual([{ name: 'b' }, { name: 'c' }]);
    expect(db.prepare('select name from t order by id')).toBe(streaming);
  });

  it('serves Kysely: repeated queries, writes, transactions, and a query of a text just streamed', async () => {
    const kysely = new Kysely<{ t: { id: Generated<number>; name: string } }>({
      dialect: new SqliteDialect({ database: cachingStatements(raw) }),
    });
    const byId = (id: number) => kysely.selectFrom('t').select('name').where('id', '=', id).executeTakeFirst();
    expect(await byId(1)).toEqual({ name: 'a' });
    expect(await byId(3)).toEqual({ name: 'c' });
    await kysely.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ name: 'd' }).execute();
    });
    expect(await byId(4)).toEqual({ name: 'd' });
    const all = kysely.selectFrom('t').select('name').orderBy('id');
    const streamed: string[] = [];
    for await (const row of all.stream()) streamed.push(row.name);
    expect(streamed).toEqual(['a', 'b', 'c', 'd']);
    expect(await all.execute()).toHaveLength(4);
    expect(prepared.filter((s) => s.startsWith('select "name" from "t" where')).length).toBe(1);
    await sql`select 1`.execute(kysely);
    await kysely.destroy();
    expect(raw.open).toBe(false);
  });
});
