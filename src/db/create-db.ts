import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseTarget } from '../config.js';
import type { Database } from './database.js';

/** A connected database: the Kysely handle plus what health checks and shutdown need to know about it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: DatabaseTarget['dialect'];
  /** Where the data lives, without credentials: a file path, or host and database name. */
  describe(): { host: string; database: string };
  /** Connections currently checked out (PostgreSQL pool) or open (SQLite: always one). */
  activeConnections(): number;
  /** Round-trips a trivial query; throws when the database cannot answer. */
  ping(): Promise<void>;
  destroy(): Promise<void>;
}

// PostgreSQL's int8 (COUNT, BIGSERIAL) arrives as text by default; our counts fit in a double.
const PG_INT8_OID = 20;
function getTypeParser(oid: number, format: 'text' | 'binary' = 'text'): (value: string) => unknown {
  if (oid === PG_INT8_OID) return Number;
  return pg.types.getTypeParser(oid, format) as (value: string) => unknown;
}
const pgTypes = { getTypeParser };

function openSqlite(filename: string): Db {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const sqlite = new SQLite(filename);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return {
    kysely,
    dialect: 'sqlite',
    describe: () => ({ host: 'localhost', database: filename }),
    activeConnections: () => (sqlite.open ? 1 : 0),
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    destroy: () => kysely.destroy(),
  };
}

function openPostgres(connectionString: string): Db {
  const pool = new pg.Pool({ connectionString, max: 10, types: pgTypes, connectionTimeoutMillis: 5_000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const url = new URL(connectionString);
  return {
    kysely,
    dialect: 'postgres',
    describe: () => ({ host: url.host || 'localhost', database: decodeURIComponent(url.pathname.slice(1)) }),
    activeConnections: () => pool.totalCount - pool.idleCount,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    destroy: () => kysely.destroy(),
  };
}

/** Opens the configured database (nothing is migrated here; see migrate.ts). */
export function createDb(target: DatabaseTarget): Db {
  return target.dialect === 'sqlite' ? openSqlite(target.filename) : openPostgres(target.connectionString);
}
