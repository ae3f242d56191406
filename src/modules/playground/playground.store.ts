import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import type { Database } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
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

/*
 * Every function that reads, changes or deletes a session or what it holds takes the session's user and names it in
 * the WHERE of the statement that acts: the messages, spans and logs of a session are reached only through
 * `ownedSession`, never by a session id alone, so no caller can reach another user's rows and a miss changes nothing.
 */

/** The id of the session, if it is the user's: the scope of every statement on a session's messages, spans and logs. */
function ownedSession(db: Executor, userId: string, id: string) {
  return db.selectFrom('playground_sessions').select('id').where('id', '=', id).where('user_id', '=', userId);
}

export async function insertSession(db: Executor, row: SessionRow): Promise<void> {
  await db.insertInto('playground_sessions').values(row).execute();
}

/** The session if it is the user's; another user's session is as missing as one that never existed. */
export async function findSession(db: Executor, userId: string, id: string): Promise<SessionRow | undefined> {
  return (await sessionOf(db, userId, id))[0];
}

const sessionOf = prepared((db: Kysely<Database>, userId: string, id: string) =>
  db.selectFrom('playground_sessions').selectAll().where('id', '=', id).where('user_id', '=', userId),
);

/** The user's sessions, most recently active first, with how many messages each holds. */
export async function listSessions(
  db: Executor,
  userId: string,
  window: { limit: number; offset: number },
): Promise<(SessionRow & { message_count: number })[]> {
  const rows = await sessionsPage(db, userId, window.limit, window.offset);
  return rows.map((row) => ({ ...row, message_count: Number(row.message_count ?? 0) }));
}

const sessionsPage = prepared((db: Kysely<Database>, userId: string, limit: number, offset: number) =>
  db
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
    .limit(limit)
    .offset(offset),
);

/** Changes the user's session; false when it is not theirs (or gone), and then nothing changed. */
export async function updateSession(
  db: Executor,
  userId: string,
  id: string,
  changes: Partial<Pick<SessionRow, 'name' | 'metadata' | 'conversation_id' | 'model' | 'updated_at'>>,
): Promise<boolean> {
  const result = await db
    .updateTable('playground_sessions')
    .set(changes)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Deletes the user's session with its messages, spans and logs; returns whether it existed. Another user's session
 * loses nothing: each delete is scoped by the owner, not only the last.
 */
export async function deleteSession(db: Executor, userId: string, id: string): Promise<boolean> {
  const owned = ownedSession(db, userId, id);
  await db.deleteFrom('playground_logs').where('session_id', 'in', owned).execute();
  await db.deleteFrom('playground_spans').where('session_id', 'in', owned).execute();
  await db.deleteFrom('playground_messages').where('session_id', 'in', owned).execute();
  const result = await db
    .deleteFrom('playground_sessions')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Erasure (by user id, on the erasure's transaction): every session of the user, with everything in them; returns how many sessions. */
export async function deleteSessionsOf(db: Executor, userId: string): Promise<number> {
  const owned = db.selectFrom('playground_sessions').select('id').where('user_id', '=', userId);
  await db.deleteFrom('playground_logs').where('session_id', 'in', owned).execute();
  await db.deleteFrom('playground_spans').where('session_id', 'in', owned).execute();
  await db.deleteFrom('playground_messages').where('session_id', 'in', owned).execute();
  const result = await db.deleteFrom('playground_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Every session of the user, oldest first (their data export). */
export function sessionsOf(db: Executor, userId: string): Promise<SessionRow[]> {
  return db
    .selectFrom('playground_sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The messages of those of `sessionIds` that are the user's, by session and in order. */
export function messagesOf(db: Executor, userId: string, sessionIds: string[]): Promise<MessageRow[]> {
  if (sessionIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('playground_messages as m')
    .innerJoin('playground_sessions as s', 's.id', 'm.session_id')
    .selectAll('m')
    .where('m.session_id', 'in', sessionIds)
    .where('s.user_id', '=', userId)
    .orderBy('m.session_id')
    .orderBy('m.seq')
    .execute();
}

/**
 * Appends a message at the end of the transcript of the user's session (the next seq). The row's session is
 * written only if it is the user's: another's (or a deleted one) leaves it null, which the table refuses.
 */
export async function appendMessage(db: Executor, userId: string, row: Omit<MessageRow, 'seq'>): Promise<void> {
  await db
    .insertInto('playground_messages')
    .values((eb) => ({
      ...row,
      session_id: ownedSession(db, userId, row.session_id),
      seq: eb
        .selectFrom('playground_messages')
        .select(sql<number>`coalesce(max(seq), 0) + 1`.as('next'))
        .where('session_id', '=', row.session_id),
    }))
    .execute();
}

/** Keeps a span of a turn in the user's session (refused, as `appendMessage` is, when it is not theirs). */
export async function insertSpan(db: Executor, userId: string, row: SpanRow): Promise<void> {
  await db
    .insertInto('playground_spans')
    .values({ ...row, session_id: ownedSession(db, userId, row.session_id) })
    .onConflict((oc) => oc.column('span_id').doNothing())
    .execute();
}

/** The spans of the user's session, oldest first; the newest `limit` of them. */
export async function spansOf(db: Executor, userId: string, sessionId: string, limit: number): Promise<SpanRow[]> {
  const rows = await db
    .selectFrom('playground_spans')
    .selectAll()
    .where('session_id', 'in', ownedSession(db, userId, sessionId))
    .orderBy('started_at', 'desc')
    .orderBy('span_id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse();
}

/** Appends a log record to the user's session (refused, as `appendMessage` is, when it is not theirs). */
export async function appendLog(db: Executor, userId: string, row: Omit<LogRow, 'seq'>): Promise<void> {
  await db
    .insertInto('playground_logs')
    .values((eb) => ({
      ...row,
      session_id: ownedSession(db, userId, row.session_id),
      seq: eb
        .selectFrom('playground_logs')
        .select(sql<number>`coalesce(max(seq), 0) + 1`.as('next'))
        .where('session_id', '=', row.session_id),
    }))
    .execute();
}

/** The log records of the user's session at `minimumLevel` or above, oldest first. */
export function logsOf(
  db: Executor,
  userId: string,
  sessionId: string,
  minimumLevel: number,
  limit: number,
): Promise<LogRow[]> {
  return db
    .selectFrom('playground_logs')
    .selectAll()
    .where('session_id', 'in', ownedSession(db, userId, sessionId))
    .where('level', '>=', minimumLevel)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** What the stored turns of the user's session add up to (all zero when it is not theirs). */
export async function sessionTotals(db: Executor, userId: string, sessionId: string) {
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
    .where('session_id', 'in', ownedSession(db, userId, sessionId))
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
