import type SQLite from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * better-sqlite3 compiles SQL on every `prepare`, and Kysely's SQLite driver prepares every query it runs: on a
 * hot route that compilation costs more than the query. This wraps the connection so that each distinct SQL
 * text is compiled once and its statement reused, most recently used first, up to `capacity` texts (queries with
 * variable-length `in (…)` lists each have their own text; the bound keeps those from growing without end).
 *
 * A statement still being iterated (a streamed query) is busy and cannot run again until it finishes; a second
 * use meanwhile gets a statement of its own.
 */
export function cachingStatements(database: SQLite.Database, capacity = 512): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached && !cached.busy) {
        // Re-inserting moves it to the young end of the map's order.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      if (!cached) {
        statements.set(sql, statement);
        if (statements.size > capacity) statements.delete(statements.keys().next().value!);
      }
      return statement;
    },
    close(): void {
      statements.clear();
      database.close();
    },
  };
}
