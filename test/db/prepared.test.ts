import SQLite from 'better-sqlite3';
import { type Generated, Kysely, SqliteDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Db as ServiceDb, createDb } from '../../src/db/create-db.js';
import { prepared } from '../../src/db/prepared.js';
import { cachingStatements } from '../../src/db/statement-cache.js';
import { createPostgresDatabase, describeWithService, probePostgres } from '../helpers/services.js';

/**
 * Queries built and compiled by Kysely once per dialect, run with each call's values: the same rows as the query
 * built afresh, inside and outside transactions, on SQLite and on PostgreSQL (whose SQL differs).
 */

interface Db {
  pets: { id: Generated<number>; owner: string; name: string; legs: number };
}

const petsOf = prepared((db: Kysely<Db>, owner: string, minLegs: number) =>
  db
    .selectFrom('pets')
    .select(['name', 'legs'])
    .where('owner', '=', owner)
    .where('legs', '>=', minLegs)
    .orderBy('name')
    .limit(10),
);

async function seed(db: Kysely<Db>): Promise<void> {
  await db.schema
    .createTable('pets')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('legs', 'integer', (c) => c.notNull())
    .execute()
    .catch(async () => {
      // SQLite has no identity columns: an integer primary key is its rowid.
      await sql`create table pets (id integer primary key, owner text not null, name text not null, legs integer not null)`.execute(
        db,
      );
    });
  await db
    .insertInto('pets')
    .values([
      { owner: 'alice', name: 'rex', legs: 4 },
      { owner: 'alice', name: 'polly', legs: 2 },
      { owner: 'alice', name: 'nemo', legs: 0 },
      { owner: 'bob', name: 'tom', legs: 4 },
    ])
    .execute();
}

function behavesLikeTheBuiltQuery(database: () => Kysely<Db>): void {
  it('answers each call with its own values, as the query built afresh does', async () => {
    const db = database();
    for (const [owner, legs] of [
      ['alice', 0],
      ['alice', 3],
      ['bob', 0],
      ['carol', 0],
    ] as const) {
      const fresh = await db
        .selectFrom('pets')
        .select(['name', 'legs'])
        .where('owner', '=', owner)
        .where('legs', '>=', legs)
        .orderBy('name')
        .limit(10)
        .execute();
      expect(await petsOf(db, owner, legs)).toEqual(fresh);
    }
    expect((await petsOf(db, 'alice', 1)).map((p) => p.name)).toEqual(['polly', 'rex']);
  });

  it('runs inside a transaction, seeing its uncommitted rows', async () => {
    const db = database();
    await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('pets').values({ owner: 'dana', name: 'kit', legs: 4 }).execute();
        expect(await petsOf(trx, 'dana', 0)).toEqual([{ name: 'kit', legs: 4 }]);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await petsOf(db, 'dana', 0)).toEqual([]);
  });
}

describe('a prepared query on SQLite', () => {
  let db: Kysely<Db>;
  const compiled: string[] = [];
  beforeAll(async () => {
    const raw = new SQLite(':memory:');
    const prepare = raw.prepare.bind(raw);
    raw.prepare = (source: string) => {
      compiled.push(source);
      return prepare(source);
    };
    db = new Kysely<Db>({ dialect: new SqliteDialect({ database: cachingStatements(raw) }) });
    await seed(db);
  });
  afterAll(() => db.destroy());

  behavesLikeTheBuiltQuery(() => db);

  it('is one SQL text, compiled by SQLite once, whatever the values', async () => {
    compiled.length = 0;
    for (let i = 0; i < 5; i++) await petsOf(db, `owner-${i}`, i);
    expect(compiled.length).toBeLessThanOrEqual(1);
  });
});

describe("a prepared query on the service's SQLite database", () => {
  const service = createDb({ dialect: 'sqlite', filename: ':memory:' });
  const db = service.kysely as unknown as Kysely<Db>;
  const raw = service.raw.dialect === 'sqlite' ? service.raw.database : undefined;
  /** What ran, in order: statements call `noted` as SQLite runs them. */
  const order: string[] = [];
  raw!.function('noted', (what: unknown) => {
    order.push(String(what));
    return 1;
  });
  const noted = prepared((kysely: Kysely<Db>, owner: string) =>
    kysely
      .selectFrom('pets')
      .select((eb) => ['name', eb.fn<number>('noted', [eb.ref('owner')]).as('seen')])
      .where('owner', '=', owner),
  );
  beforeAll(() => seed(db));
  afterAll(() => service.destroy());

  behavesLikeTheBuiltQuery(() => db);

  it('runs at once while nothing holds the connection', async () => {
    order.length = 0;
    const rows = noted(db, 'bob');
    order.push('called');
    expect(await rows).toEqual([{ name: 'tom', seen: 1 }]);
    expect(order).toEqual(['bob', 'called']);
  });

  it('waits for a transaction that holds the connection, and never runs inside it', async () => {
    order.length = 0;
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((resolve) => (inserted = resolve));
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => (finish = resolve));
    const transaction = db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('pets').values({ owner: 'erin', name: 'ghost', legs: 4 }).execute();
        inserted();
        await finishing;
        throw new Error('roll back');
      })
      .catch(() => order.push('rolled back'));
    await insertedOnce;
    const rows = noted(db, 'erin');
    order.push('called');
    finish();
    // Run inside the transaction, it would have seen the row the transaction then rolled back.
    expect(await rows).toEqual([]);
    await transaction;
    expect(order).toEqual(['called', 'rolled back']);
    expect(await noted(db, 'erin')).toEqual([]);
  });

  it('fails as a rejection, not a throw, when SQLite refuses the statement', async () => {
    const missing = prepared((kysely: Kysely<{ nowhere: { id: number } }>) => kysely.selectFrom('nowhere').selectAll());
    let answer: Promise<unknown> | undefined;
    expect(() => (answer = missing(db as unknown as Kysely<{ nowhere: { id: number } }>))).not.toThrow();
    await expect(answer).rejects.toThrow(/no such table: nowhere/);
  });
});

const postgres = await probePostgres();
describeWithService("a prepared query on the service's PostgreSQL database", postgres, () => {
  let service: ServiceDb;
  let db: Kysely<Db>;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    // The service's own pool: a connection the dropped database's server ends is an error it handles.
    service = createDb({ dialect: 'postgres', connectionString: database.url });
    db = service.kysely as unknown as Kysely<Db>;
    await seed(db);
  });
  afterAll(async () => {
    await service.destroy();
    await drop();
  });

  behavesLikeTheBuiltQuery(() => db);
});
