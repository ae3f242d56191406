import { sql } from 'kysely';
import type { Db } from '../../src/db/create-db.js';

/** Every table of the database whose rows contain `needle` anywhere, as text. */
export async function tablesContaining(db: Db, needle: string): Promise<string[]> {
  const tables =
    db.dialect === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db.kysely)).rows.map(
          (r) => r.name,
        )
      : // Every schema the service writes to (the checkpoints have their own), named `schema.table` outside the
        // current one.
        (
          await sql<{ name: string }>`
            select case when table_schema = current_schema() then table_name
                        else table_schema || '.' || table_name end as name
            from information_schema.tables
            where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`.execute(
            db.kysely,
          )
        ).rows.map((r) => r.name);
  const found: string[] = [];
  for (const table of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db.kysely);
    if (rows.some((row) => JSON.stringify(row).includes(needle))) found.push(table);
  }
  return found;
}
