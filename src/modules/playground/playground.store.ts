import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import type { Database } from '../../db/database.js';
import type {
  PlaygroundLogsTable,
  PlaygroundMessagesTable,
  PlaygroundSessionsTable,
  PlaygroundSpansTable,
} from './playground.tables.js';

export type Executor = Kysely<Database> | Transaction<Database>;
export type SessionRow = Selectable<PlaygroundSessionsTable>;
export type MessageRow = Selectable<PlaygroundMessagesTable>;
export type SpanRow = Selectable<PlaygroundSpansTable>;
export type LogRow = Selectable<PlaygroundLogsTable>;

export async function insertSession(db: Executor, row: SessionRow): Promise<void> {
  await db.insertInto('playground_sessions').values(row).execute();
}

/** The session if it is the user's; another user's session is as missing as one that never existed. */
export function findSession(db: Executor, userId: string, id: string): Promise<SessionRow | undefined> {
  return db
    .selectFrom('playground_sessions')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** The user's sessions, most recently active first, with how many messages each holds. */
export function listSessions(
  db: Executor,
  userId: string,
  window: { limit: number; offset: number },
): Promise<(SessionRow & { message_count: number })[]> {
  return db
    .selectFrom('playground_sessions as s')
    .selectAll('s')
    .select((eb) =>
      eb
        .selectFrom('playground_messages as m')
        .whereRef('m.session_id', '=', 's.id')
        .select(eb.fn.countAll<number>().as('n'))
        .as('message_count'),
    )
    .where('s.user_id', '=', userId)
    .orderBy('s.updated_at', 'desc')
    .orderBy('s.id')
    .limit(window.limit)
    .offset(window.offset)
    .execute()
    .then((rows) => rows.map((row) => ({ ...row, message_count: Number(row.message_count ?? 0) })));
}

export async function updateSession(
  db: Executor,
  id: string,
  changes: Partial<Pick<SessionRow, 'name' | 'metadata' | 'conversation_id' | 'model' | 'updated_at'>>,
): Promise<void> {
  await db.updateTable('playground_sessions').set(changes).where('id', '=', id).execute();
}

/** Deletes the session with its messages, spans and logs; returns whether it existed. */
export async function deleteSession(db: Executor, userId: string, id: string): Promise<boolean> {
  await db.deleteFrom('playground_logs').where('session_id', '=', id).execute();
  await db.deleteFrom('playground_spans').where('session_id', '=', id).execute();
  await db.deleteFrom('playground_messages').where('session_id', '=', id).execute();
  const result = await db
    .deleteFrom('playground_sessions')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Erasure: every session of the user, with everything in them; returns how many sessions. */
export async function deleteSessionsOf(db: Executor, userId: string): Promise<number> {
  const owned = db.selectFrom('playground_sessions').select('id').where('user_id', '=', userId);
  await db.deleteFrom('playground_logs').where('session_id', 'in', owned).execute();
  await db.deleteFrom('playground_spans').where('session_id', 'in', owned).execute();
  await db.deleteFrom('playground_messages').where('session_id', 'in', owned).execute();
  const result = await db.deleteFrom('playground_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export function sessionsOf(db: Executor, userId: string): Promise<SessionRow[]> {
  return db
    .selectFrom('playground_sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function messagesOf(db: Executor, sessionIds: string[]): Promise<MessageRow[]> {
  if (sessionIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('playground_messages')
    .selectAll()
    .where('session_id', 'in', sessionIds)
    .orderBy('session_id')
    .orderBy('seq')
    .execute();
}

/** Appends a message at the end of the session's transcript (the next seq). */
export async function appendMessage(db: Executor, row: Omit<MessageRow, 'seq'>): Promise<void> {
  await db
    .insertInto('playground_messages')
    .values((eb) => ({
      ...row,
      seq: eb
        .selectFrom('playground_messages')
        .select(sql<number>`coalesce(max(seq), 0) + 1`.as('next'))
        .where('session_id', '=', row.session_id),
    }))
    .execute();
}

export async function insertSpan(db: Executor, row: SpanRow): Promise<void> {
  await db
    .insertInto('playground_spans')
    .values(row)
    .onConflict((oc) => oc.column('span_id').doNothing())
    .execute();
}

/** The session's spans, oldest first; the newest `limit` of them. */
export async function spansOf(db: Executor, sessionId: string, limit: number): Promise<SpanRow[]> {
  const rows = await db
    .selectFrom('playground_spans')
    .selectAll()
    .where('session_id', '=', sessionId)
    .orderBy('started_at', 'desc')
    .orderBy('span_id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse();
}

export async function appendLog(db: Executor, row: Omit<LogRow, 'seq'>): Promise<void> {
  await db
    .insertInto('playground_logs')
    .values((eb) => ({
      ...row,
      seq: eb
        .selectFrom('playground_logs')
        .select(sql<number>`coalesce(max(seq), 0) + 1`.as('next'))
        .where('session_id', '=', row.session_id),
    }))
    .execute();
}

export function logsOf(db: Executor, sessionId: string, minimumLevel: number, limit: number): Promise<LogRow[]> {
  return db
    .selectFrom('playground_logs')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('level', '>=', minimumLevel)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** What the session's stored turns add up to. */
export async function sessionTotals(db: Executor, sessionId: string) {
  const row = await db
    .selectFrom('playground_messages')
    .select((eb) => [
      eb.fn.countAll<number>().as('message_count'),
      eb.fn.coalesce(eb.fn.sum<number>('prompt_tokens'), eb.lit(0)).as('prompt_tokens'),
      eb.fn.coalesce(eb.fn.sum<number>('completion_tokens'), eb.lit(0)).as('completion_tokens'),
      eb.fn.avg<number>('latency_ms').as('average_latency_ms'),
      eb.fn.coalesce(eb.fn.sum<number>('tool_call_count'), eb.lit(0)).as('tool_call_count'),
      eb.fn.count<number>('error').as('error_count'),
    ])
    .where('session_id', '=', sessionId)
    .executeTakeFirstOrThrow();
  return {
    messageCount: Number(row.message_count),
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    averageLatencyMs: row.average_latency_ms === null ? 0 : Math.round(Number(row.average_latency_ms)),
    toolCallCount: Number(row.tool_call_count),
    errorCount: Number(row.error_count),
  };
}
