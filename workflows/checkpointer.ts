import type { BaseCheckpointSaver } from '@langchain/langgraph';
import type { Db } from '../src/db/create-db.js';

/** A checkpoint saver that can also forget a thread (conversation erasure). */
export type Checkpointer = BaseCheckpointSaver & { deleteThread(threadId: string): Promise<void> };

type SqliteDatabase = Extract<Db['raw'], { dialect: 'sqlite' }>['database'];

let sqliteCheckpointer: Promise<new (database: SqliteDatabase) => Checkpointer> | undefined;
/**
 * SQLite's saver, loaded when the first checkpointer is made (it brings LangGraph's checkpoint library with it).
 * SQLite's saver creates its tables on first use, but its `deleteThread` is not such a use: erasure may come first.
 */
function loadSqliteCheckpointer() {
  sqliteCheckpointer ??= import('@langchain/langgraph-checkpoint-sqlite').then(
    ({ SqliteSaver }) =>
      class SqliteCheckpointer extends SqliteSaver {
        override async deleteThread(threadId: string): Promise<void> {
          this.setup();
          await super.deleteThread(threadId);
        }
      },
  );
  return sqliteCheckpointer;
}

/**
 * LangGraph state lives in the service's own database: SQLite's saver on SQLite, PostgreSQL's (in its own
 * `langgraph` schema) on PostgreSQL, so conversations continue across restarts and instances.
 */
export async function createCheckpointer(db: Db): Promise<Checkpointer> {
  if (db.raw.dialect === 'sqlite') return new (await loadSqliteCheckpointer())(db.raw.database);
  // Loaded only on PostgreSQL: it brings the PostgreSQL driver with it.
  const { PostgresSaver } = await import('@langchain/langgraph-checkpoint-postgres');
  const saver = new PostgresSaver(db.raw.pool, undefined, { schema: 'langgraph' });
  await saver.setup();
  return saver;
}
