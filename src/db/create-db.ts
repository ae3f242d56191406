import { createRequire } from 'node:module';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { type Driver, Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type pg from 'pg';
import type { DatabaseTarget } from '../config.js';
import type { Database } from './database.js';
import { runDirectly } from './prepared.js';
import { cachingStatements } from './statement-cache.js';

/** Runs each attempt to take a connection (a circuit breaker: it may refuse at once while the server is away). */
export interface ConnectionGuard {
  run<T>(connect: () => Promise<T>): Promise<T>;
}

export interface DbOptions {
  breaker?: ConnectionGuard;
  /**
   * Told of every PostgreSQL connection that is lost, idle in the pool or checked out (a query in flight fails on
   * its own, to its caller). The pool replaces the connection either way; nothing else needs to be done.
   */
  onConnectionError?: (error: Error) => void;
}

/** A connected database: the Kysely handle plus what health checks and shutdown need to know about it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: DatabaseTarget['dialect'];
  /** The driver's own handle, for libraries that need it (LangGraph's checkpoint savers). */
  readonly raw: { dialect: 'sqlite'; database: SQLite.Database } | { dialect: 'postgres'; pool: pg.Pool };
  /** Where the data lives, without credentials: a file path, or host and database name. */
  describe(): { host: string; database: string };
  /** Connections currently checked out (PostgreSQL pool) or open (SQLite: always one). */
  activeConnections(): number;
  /** Round-trips a trivial query; throws when the database cannot answer. */
  ping(): Promise<void>;
  /**
   * Runs `work` while no other process runs exclusive work on the same database (migrations). PostgreSQL needs
   * nothing here: Kysely's migrator takes an advisory lock there.
   */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
  destroy(): Promise<void>;
}

/** The PostgreSQL driver, loaded only when a PostgreSQL database is opened (SQLite deployments never need it). */
const loadPg = () => createRequire(import.meta.url)('pg') as typeof pg;

// PostgreSQL's int8 (COUNT, BIGSERIAL) arrives as text by default; our counts fit in a double.
const PG_INT8_OID = 20;
function getTypeParser(oid: number, format: 'text' | 'binary' = 'text'): (value: string) => unknown {
  if (oid === PG_INT8_OID) return Number;
  return loadPg().types.getTypeParser(oid, format) as (value: string) => unknown;
}
const pgTypes = { getTypeParser };

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates the lock file with our pid; false when it exists already. */
function tryLock(path: string): boolean {
  try {
    const fd = openSync(path, 'wx');
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** The pid in the lock file: undefined when it has gone, NaN while its owner is still writing it. */
function lockOwner(path: string): number | undefined {
  try {
    return Number(readFileSync(path, 'utf8') || NaN);
  } catch {
    return undefined;
  }
}

/**
 * A lock file beside the database, created exclusively and holding the owner's pid. A lock whose owner has died
 * is taken over; a live owner is waited for.
 */
async function withLockFile<T>(path: string, work: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (!tryLock(path)) {
    const owner = lockOwner(path);
    if (owner === undefined) continue; // released between our attempt and the read
    if (Number.isInteger(owner) && owner > 0 && !processAlive(owner)) {
      rmSync(path, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${path} (held by process ${owner})`);
    await sleep(25);
  }
  try {
    return await work();
  } finally {
    rmSync(path, { force: true });
  }
}

/**
 * Kysely's SQLite dialect, counting who holds its one connection or waits for it (a query between its promise steps,
 * a transaction across its awaits): while none does, a statement may run on the connection directly
 * (`runDirectly`).
 */
class HeldSqliteDialect extends SqliteDialect {
  held = 0;

  override createDriver(): Driver {
    const driver = super.createDriver();
    const acquire = driver.acquireConnection.bind(driver);
    const release = driver.releaseConnection.bind(driver);
    driver.acquireConnection = async () => {
      this.held += 1;
      try {
        return await acquire();
      } catch (error) {
        this.held -= 1;
        throw error;
      }
    };
    driver.releaseConnection = async (connection) => {
      try {
        await release(connection);
      } finally {
        this.held -= 1;
      }
    };
    return driver;
  }
}

function openSqlite(filename: string): Db {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const sqlite = new SQLite(filename);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const statements = cachingStatements(sqlite);
  const dialect = new HeldSqliteDialect({ database: statements });
  const kysely = new Kysely<Database>({ dialect });
  runDirectly(kysely, {
    idle: () => dialect.held === 0,
    run: (text, parameters) => {
      const statement = statements.prepare(text) as SQLite.Statement;
      if (statement.reader) return statement.all(...(parameters as unknown[]));
      statement.run(...(parameters as unknown[]));
      return [];
    },
  });
  return {
    kysely,
    dialect: 'sqlite',
    raw: { dialect: 'sqlite', database: sqlite },
    describe: () => ({ host: 'localhost', database: filename }),
    activeConnections: () => (sqlite.open ? 1 : 0),
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    // An in-memory database belongs to this connection alone.
    exclusive: (work) => (filename === ':memory:' ? work() : withLockFile(`${filename}.migrate-lock`, work)),
    destroy: () => kysely.destroy(),
  };
}

function openPostgres(connectionString: string, options: DbOptions): Db {
  const { breaker, onConnectionError } = options;
  const pool = new (loadPg().Pool)({ connectionString, max: 10, types: pgTypes, connectionTimeoutMillis: 5_000 });
  // A connection lost while idle in the pool is dropped by the pool, which opens another when one is needed; the
  // client's own listener below reports it.
  pool.on('error', () => undefined);
  // A connection lost while checked out (a query in flight, or between the statements of a transaction): the
  // driver fails the query, which answers its request 503, and then emits 'error' on the client, where the pool
  // listens only while the client is idle. Unheard, that event would end the process.
  pool.on('connect', (client) => client.on('error', (error) => onConnectionError?.(error)));
  if (breaker) {
    // Kysely and the checkpoint saver take connections with the promise form; pg's own callback form is left as is.
    const connect = pool.connect.bind(pool);
    pool.connect = ((callback?: Parameters<pg.Pool['connect']>[0]) =>
      callback ? connect(callback) : breaker.run(() => connect())) as pg.Pool['connect'];
  }
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const url = new URL(connectionString);
  return {
    kysely,
    dialect: 'postgres',
    raw: { dialect: 'postgres', pool },
    describe: () => ({ host: url.host || 'localhost', database: decodeURIComponent(url.pathname.slice(1)) }),
    activeConnections: () => pool.totalCount - pool.idleCount,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    exclusive: (work) => work(),
    destroy: () => kysely.destroy(),
  };
}

/**
 * Opens the configured database (nothing is migrated here; see migrate.ts). With a breaker, every PostgreSQL
 * connection is taken through it: once the server cannot be reached, requests fail at once with a 503 instead of
 * each waiting out the connection timeout.
 */
export function createDb(target: DatabaseTarget, options: DbOptions = {}): Db {
  return target.dialect === 'sqlite' ? openSqlite(target.filename) : openPostgres(target.connectionString, options);
}
