import type { ToolNeeds } from '../../ports/connected-tools.js';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Broadcast } from '../../adapters/broadcast/port.js';
import type { CounterStore } from '../../adapters/counters/port.js';
import type { FinishedSpan, Telemetry } from '../../adapters/telemetry/port.js';
import type { Database } from '../../db/database.js';
import { type AppError, CommonErrorCode, ValidationError, toAppError } from '../../errors.js';
import { isServiceStopping } from '../../lifecycle.js';
import type { Logger } from '../../logger.js';
import { type Caller, userIdOf } from '../../ports/caller.js';
import { RecentReads, SharedForgetting, kindAndId } from '../../ports/recent-reads.js';
import type { ChatTurnService } from '../agent/index.js';
import { noTurnRunning, peopleOnly, sessionNotFound, turnRunning } from './playground.errors.js';
import * as store from './playground.store.js';

/** The root span attribute that names a turn's playground session: its trace is kept with the session. */
export const SESSION_ATTRIBUTE = 'playground.session_id';

export const LOG_LEVELS = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40 } as const;
export type LogLevel = keyof typeof LOG_LEVELS;
const LEVEL_NAMES = Object.fromEntries(Object.entries(LOG_LEVELS).map(([name, n]) => [n, name])) as Record<
  number,
  LogLevel
>;

export interface Session {
  session_id: string;
  name: string;
  user_id: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, unknown>;
}

export interface ToolCallRecord {
  id: string;
  name: string;
  args: Record<string, unknown>;
  result?: string;
  is_error?: boolean;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface Message {
  id: string;
  role: 'user' | 'assistant';
  content: string;
  timestamp: string;
  tool_calls: ToolCallRecord[];
  /** The turn was stopped before its end; the content is what had come. */
  cancelled: boolean;
  /** The code of the error that ended the turn. */
  error: string | null;
  usage?: Usage;
  latency_ms?: number | null;
}

export interface SessionDetail extends Session {
  messages: Message[];
  model: string | null;
  total_tokens: number;
}

export interface ChatResponse {
  message_id: string;
  role: 'assistant';
  content: string;
  timestamp: string;
  tool_calls: ToolCallRecord[];
  usage: Usage;
  cancelled: boolean;
}

export interface Trace {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  operation: string;
  duration_ms: number;
  status: 'ok' | 'error' | 'unset';
  attributes: Record<string, unknown>;
  timestamp: string;
}

export interface LogEntry {
  timestamp: string;
  level: LogLevel;
  message: string;
  attributes: Record<string, unknown>;
}

export interface Metrics {
  session_id: string;
  message_count: number;
  total_tokens: number;
  average_latency_ms: number;
  error_count: number;
  tool_call_count: number;
}

/**
 * A turn its caller was admitted to (`PlaygroundService.admit`): who asked what, in which of their sessions, as the
 * session was when they were admitted. The turn runs from it without reading the session again.
 */
export interface AdmittedTurn {
  readonly caller: Caller;
  readonly session: store.SessionRow;
  readonly message: string;
}

/**
 * What a turn emits, in the playground's event names (spec "Events"): `token`…, `tool_call` / `tool_result`, then
 * `end`, or `error` when the turn failed. A cancelled turn ends with `end` marked cancelled.
 */
export type PlaygroundEvent =
  | { type: 'token'; content: string }
  | ({ type: 'tool_call' } & Pick<ToolCallRecord, 'id' | 'name' | 'args'>)
  | { type: 'tool_result'; id: string; name: string; content: string; is_error: boolean }
  /** The call needs the person: to approve it, or to connect their account at the tool's server. */
  | ({ type: 'approval_required'; id: string } & Omit<Extract<ToolNeeds, { kind: 'approval' }>, 'kind'>)
  | ({ type: 'connect_required'; id: string } & Omit<Extract<ToolNeeds, { kind: 'connect' }>, 'kind'>)
  | { type: 'end'; message_id: string; cancelled: boolean; usage: Usage; latency_ms: number }
  | { type: 'error'; error: AppError; message_id: string };

export interface PlaygroundDeps {
  db: Kysely<Database>;
  chat: ChatTurnService;
  /**
   * Shared by every instance: which sessions have a turn running (one at a time per session, wherever it runs),
   * and the signal that cancels a turn on the instance running it.
   */
  turns: { locks: CounterStore; broadcast: Broadcast };
  telemetry: Pick<Telemetry, 'collect'>;
  logger: Logger;
  now: () => Date;
  /** The longest message a turn accepts (characters). */
  maxMessageChars: number;
  /**
   * How long a session's row, read as a turn was admitted, serves the session's next turns on this instance (0:
   * every turn reads it). What a turn reads of it (whose it is, its conversation) changes only by a deletion or a
   * turn that starts a conversation, and those are told to every instance through the broadcast; only where it
   * reaches every instance may rows be held (see `heldRowsMs` where the service is composed).
   */
  heldMs?: number;
}

const parseObject = (text: string): Record<string, unknown> => {
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
};

function toSession(row: store.SessionRow): Session {
  return {
    session_id: row.id,
    name: row.name,
    user_id: row.user_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    metadata: parseObject(row.metadata),
  };
}

function toMessage(row: store.MessageRow): Message {
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    timestamp: row.created_at,
    tool_calls: JSON.parse(row.tool_calls) as ToolCallRecord[],
    cancelled: row.cancelled === 1,
    error: row.error,
    ...(row.role === 'assistant' && {
      usage: {
        prompt_tokens: row.prompt_tokens,
        completion_tokens: row.completion_tokens,
        total_tokens: row.prompt_tokens + row.completion_tokens,
      },
      latency_ms: row.latency_ms,
    }),
  };
}

function toTrace(row: store.SpanRow): Trace {
  return {
    trace_id: row.trace_id,
    span_id: row.span_id,
    parent_span_id: row.parent_span_id,
    operation: row.operation,
    duration_ms: row.duration_ms,
    status: row.status,
    attributes: parseObject(row.attributes),
    timestamp: row.started_at,
  };
}

/** Where cancellations go to every instance. */
const CANCEL_CHANNEL = 'playground:cancel';
/** A turn's hold on its session lapses after this long, should its instance die without releasing it. */
const TURN_LOCK_MS = 15 * 60_000;
const turnLock = (sessionId: string) => `playground:turn:${sessionId}`;
const HELD_SESSIONS = 10_000;
/** Where instances tell each other of sessions to read again: `session:<id>`, or `user:<id>` (all of theirs). */
const SESSIONS_CHANGED_CHANNEL = 'playground-sessions-changed';

/**
 * Chat sessions with the agent for people trying it out: their transcripts (tool calls and results included), and
 * for each turn its spans, log records and what they add up to, all kept in the service's database.
 */
export class PlaygroundService {
  /** Turns running on this instance, by session: what stops each, and whose session its spans are kept in. */
  readonly #running = new Map<string, { stop: AbortController; userId: string }>();
  /** Span writes not yet finished, so a turn's trace is stored before the turn is reported ended. */
  readonly #spanWrites = new Set<Promise<void>>();
  /**
   * Session rows as turns were admitted to them, by session id: the next turn in a session starts without reading
   * it again (a statement before the model is asked, and the first of the turn to touch the database).
   */
  readonly #held: RecentReads<store.SessionRow>;
  readonly #changes = new SharedForgetting<`session:${string}` | `user:${string}`>(
    SESSIONS_CHANGED_CHANNEL,
    (message) => this.#forget(message),
    (err) => this.deps.logger.warn({ err }, 'changed playground session not broadcast'),
  );

  constructor(private readonly deps: PlaygroundDeps) {
    this.#held = new RecentReads(deps.heldMs ?? 0, HELD_SESSIONS);
    deps.telemetry.collect(SESSION_ATTRIBUTE, (sessionId, span) => this.#keepSpan(sessionId, span));
    this.#stopCancels = deps.turns.broadcast.subscribe(CANCEL_CHANNEL, (sessionId) =>
      this.#running.get(sessionId)?.stop.abort(),
    );
  }

  readonly #stopCancels: () => void;

  /**
   * Tells the other instances of sessions that change or go here, and reads afresh those that change on them,
   * through `broadcast`. Returns the stop.
   */
  shareForgetting(broadcast: Broadcast): () => void {
    return this.#changes.share(broadcast);
  }

  /** Stops listening for cancellations (shutdown); the session changes it shares stop with the module's `shares`. */
  close(): void {
    this.#stopCancels();
  }

  /** Reads every session of the user afresh for their next turns, here and on every instance (erasure). */
  async forgetSessionsOf(userId: string): Promise<void> {
    await this.#changes.tell(`user:${userId}`);
  }

  #forget(message: string): void {
    const { kind, id } = kindAndId(message);
    if (kind === 'session') this.#held.forget(id);
    else if (kind === 'user') this.#held.forget((row) => row.user_id === id);
  }

  /** Whether a turn runs in the session, on any instance. */
  async #busy(sessionId: string): Promise<boolean> {
    return (await this.deps.turns.locks.peek(turnLock(sessionId))).count > 0;
  }

  /**
   * Stops the turn running in one of the caller's sessions, on whichever instance runs it: its stream ends with
   * `end` marked cancelled, and the partial answer is kept. 409 when no turn is running.
   */
  async cancelTurn(caller: Caller, sessionId: string): Promise<void> {
    await this.#session(caller, sessionId);
    if (!(await this.#busy(sessionId))) throw noTurnRunning();
    await this.deps.turns.broadcast.publish(CANCEL_CHANNEL, sessionId);
  }

  async createSession(caller: Caller, input: { name?: string; metadata?: Record<string, unknown> }): Promise<Session> {
    const userId = personOf(caller);
    const now = this.deps.now().toISOString();
    const row: store.SessionRow = {
      id: randomUUID(),
      user_id: userId,
      name: input.name?.trim() || `Session ${now.slice(0, 16).replace('T', ' ')}`,
      metadata: JSON.stringify(input.metadata ?? {}),
      conversation_id: null,
      model: null,
      created_at: now,
      updated_at: now,
    };
    await store.insertSession(this.deps.db, row);
    await this.#log(row, 'INFO', 'session created', {});
    return toSession(row);
  }

  /** The session, if it is the caller's (404 otherwise). */
  async session(caller: Caller, id: string): Promise<Session> {
    return toSession(await this.#session(caller, id));
  }

  async listSessions(caller: Caller, window: { limit: number; offset: number }) {
    const rows = await store.listSessions(this.deps.db, personOf(caller), window);
    return rows.map((row) => ({ ...toSession(row), message_count: row.message_count }));
  }

  async getSession(caller: Caller, id: string): Promise<SessionDetail> {
    const row = await this.#session(caller, id);
    const [messages, totals] = await Promise.all([
      store.messagesOf(this.deps.db, row.user_id, [row.id]),
      store.sessionTotals(this.deps.db, row.user_id, row.id),
    ]);
    const totalTokens = totals.promptTokens + totals.completionTokens;
    const session = toSession(row);
    return {
      ...session,
      metadata: { ...session.metadata, model: row.model, total_tokens: totalTokens },
      messages: messages.map(toMessage),
      model: row.model,
      total_tokens: totalTokens,
    };
  }

  async updateSession(
    caller: Caller,
    id: string,
    changes: { name?: string; metadata?: Record<string, unknown> },
  ): Promise<Session> {
    const row = await this.#session(caller, id);
    const updated = {
      ...(changes.name !== undefined && { name: changes.name.trim() || row.name }),
      ...(changes.metadata !== undefined && { metadata: JSON.stringify(changes.metadata) }),
      updated_at: this.deps.now().toISOString(),
    };
    if (!(await store.updateSession(this.deps.db, row.user_id, row.id, updated))) throw sessionNotFound(id);
    await this.#changes.tell(`session:${row.id}`);
    return toSession({ ...row, ...updated });
  }

  async deleteSession(caller: Caller, id: string): Promise<void> {
    const userId = personOrMissing(caller, id);
    const deleted = await this.deps.db.transaction().execute((trx) => store.deleteSession(trx, userId, id));
    if (!deleted) throw sessionNotFound(id);
    await this.#changes.tell(`session:${id}`);
  }

  /**
   * Checks that a turn may start: the session is the caller's and idle, the message fits, and the policy admits
   * the caller (403 without the chat permission, 429 beyond the rate). Call before streaming, so that a refusal
   * is an HTTP status rather than a stream event; the turn then runs in the session as read here.
   */
  async admit(caller: Caller, sessionId: string, message: string): Promise<AdmittedTurn> {
    const session = await this.#heldSession(caller, sessionId);
    if (message.length > this.deps.maxMessageChars) {
      throw new ValidationError(`message is longer than ${this.deps.maxMessageChars} characters`, [
        { loc: ['body', 'message'], msg: `at most ${this.deps.maxMessageChars} characters`, type: 'too_long' },
      ]);
    }
    if (await this.#busy(sessionId)) throw turnRunning();
    await this.deps.chat.admit(caller);
    return { caller, session, message };
  }

  /**
   * Runs one admitted turn and streams it. The user's message and the answer are stored with the tool calls, the
   * usage and the latency; aborting `signal` stops the model and the tools, and the partial answer is stored
   * marked cancelled, with what it used, and kept in the conversation the model sees next turn. Never throws once
   * started: a failure is the last event.
   */
  async *turn(admitted: AdmittedTurn, signal: AbortSignal): AsyncGenerator<PlaygroundEvent, void, undefined> {
    const { caller, session, message } = admitted;
    const sessionId = session.id;
    const lock = turnLock(sessionId);
    // The first to count the session's lock runs the turn; anyone else counted too many.
    if ((await this.deps.turns.locks.hit(lock, TURN_LOCK_MS)).count > 1) throw turnRunning();
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    this.#running.set(sessionId, { stop, userId: session.user_id });
    try {
      yield* this.#runTurn(caller, session, message, stop.signal);
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#running.delete(sessionId);
      await this.deps.turns.locks.reset(lock).catch(() => undefined);
    }
  }

  async *#runTurn(
    caller: Caller,
    session: store.SessionRow,
    message: string,
    signal: AbortSignal,
  ): AsyncGenerator<PlaygroundEvent, void, undefined> {
    const { db, now } = this.deps;
    const started = now();
    // The user's message and the turn's first log line are written from the next turn of the event loop: by then the
    // agent has sent the model its first request (what it does before that runs on promise callbacks). Written
    // first, their two statements stood between the user and the first token. Every event of the turn after its
    // start waits for them (`record`), and so does its end: the session's rows keep their order.
    const asked = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.#recordAsked(session, message, started),
    );
    asked.catch(() => undefined); // awaited below, where a failure to write fails the turn
    let recorded = false;
    const record = async () => {
      if (recorded) return;
      recorded = true;
      await asked;
    };

    const answerId = randomUUID();
    let answer = '';
    const calls: ToolCallRecord[] = [];
    let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let completed = false;
    let failure: AppError | undefined;
    let conversationId = session.conversation_id;
    let model = session.model;

    const events = this.deps.chat.stream(
      {
        caller,
        query: message,
        ...(session.conversation_id && { conversationId: session.conversation_id }),
        traceAttributes: { [SESSION_ATTRIBUTE]: session.id },
        // The stopped answer stays on the page, so it stays in what the model sees next turn.
        keepStopped: true,
      },
      signal,
    );
    try {
      for await (const event of events) {
        if (event.type !== 'content_start') await record();
        switch (event.type) {
          case 'content_delta':
            answer += event.delta;
            yield { type: 'token', content: event.delta };
            break;
          case 'tool_call': {
            const call: ToolCallRecord = { id: `call_${calls.length + 1}`, name: event.name, args: event.args };
            calls.push(call);
            await this.#log(session, 'INFO', `tool ${event.name} called`, { tool: event.name, args: event.args });
            yield { type: 'tool_call', id: call.id, name: call.name, args: call.args };
            break;
          }
          case 'tool_result': {
            // Tools run one after another: a result answers the latest call of its name without one.
            const call = calls.findLast((c) => c.name === event.name && c.result === undefined);
            const id = call?.id ?? `call_${calls.length}`;
            if (call) Object.assign(call, { result: event.content, is_error: event.isError });
            await this.#log(session, event.isError ? 'WARN' : 'DEBUG', `tool ${event.name} answered`, {
              tool: event.name,
              is_error: event.isError,
              characters: event.content.length,
            });
            yield { type: 'tool_result', id, name: event.name, content: event.content, is_error: event.isError };
            if (event.needs) {
              const { kind, ...needs } = event.needs;
              yield kind === 'approval'
                ? {
                    type: 'approval_required',
                    id,
                    ...(needs as Omit<Extract<ToolNeeds, { kind: 'approval' }>, 'kind'>),
                  }
                : { type: 'connect_required', id, ...(needs as Omit<Extract<ToolNeeds, { kind: 'connect' }>, 'kind'>) };
            }
            break;
          }
          case 'message_complete':
            completed = true;
            usage = event.usage;
            conversationId = event.conversation_id;
            model = event.model;
            break;
          case 'message_cancelled':
            usage = event.usage;
            conversationId = event.conversation_id ?? conversationId;
            break;
          case 'error':
            failure = event.error;
            break;
          default:
            break;
        }
      }
    } catch (thrown) {
      failure = toAppError(thrown);
    }
    await record();

    const cancelled = !completed && !failure;
    const latencyMs = now().getTime() - started.getTime();
    // The turn's spans ended with it; store them before the turn is reported ended, so its trace is complete.
    await Promise.allSettled([...this.#spanWrites]);
    const finishedAt = now().toISOString();
    await store.appendMessage(db, session.user_id, {
      id: answerId,
      session_id: session.id,
      role: 'assistant',
      content: answer,
      tool_calls: JSON.stringify(calls),
      tool_call_count: calls.length,
      cancelled: cancelled ? 1 : 0,
      error: failure ? (failure.code ?? CommonErrorCode.Internal) : null,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      latency_ms: latencyMs,
      created_at: finishedAt,
    });
    await store.updateSession(db, session.user_id, session.id, {
      conversation_id: conversationId,
      model,
      updated_at: finishedAt,
    });
    // A turn that started the session's conversation: every instance reads the session again for its next turn.
    if (conversationId !== session.conversation_id) await this.#changes.tell(`session:${session.id}`);
    if (failure) {
      // A turn the shutdown stopped did not fail here: its client is told, and nothing needs looking into.
      if (failure.status >= 500 && !isServiceStopping(failure))
        this.deps.logger.error({ err: failure.cause ?? failure }, 'playground turn failed');
      await this.#log(session, 'ERROR', 'turn failed', {
        code: failure.code,
        message: failure.expose ? failure.message : 'Internal error',
      });
      yield { type: 'error', error: failure, message_id: answerId };
      return;
    }
    await this.#log(session, cancelled ? 'WARN' : 'INFO', cancelled ? 'turn cancelled' : 'turn finished', {
      latency_ms: latencyMs,
      total_tokens: usage.total_tokens,
      tool_calls: calls.length,
    });
    yield { type: 'end', message_id: answerId, cancelled, usage, latency_ms: latencyMs };
  }

  /** Runs a turn to its end and returns the answer (the JSON form of the chat route). */
  async complete(admitted: AdmittedTurn, signal: AbortSignal): Promise<ChatResponse> {
    let content = '';
    const calls = new Map<string, ToolCallRecord>();
    for await (const event of this.turn(admitted, signal)) {
      switch (event.type) {
        case 'token':
          content += event.content;
          break;
        case 'tool_call':
          calls.set(event.id, { id: event.id, name: event.name, args: event.args });
          break;
        case 'tool_result':
          Object.assign(calls.get(event.id) ?? {}, { result: event.content, is_error: event.is_error });
          break;
        case 'error':
          throw event.error;
        case 'end':
          return {
            message_id: event.message_id,
            role: 'assistant',
            content,
            timestamp: this.deps.now().toISOString(),
            tool_calls: [...calls.values()],
            usage: event.usage,
            cancelled: event.cancelled,
          };
      }
    }
    throw toAppError(new Error('the playground turn ended without an answer'));
  }

  async traces(caller: Caller, sessionId: string, limit: number): Promise<Trace[]> {
    const session = await this.#session(caller, sessionId);
    return (await store.spansOf(this.deps.db, session.user_id, session.id, limit)).map(toTrace);
  }

  async logs(caller: Caller, sessionId: string, minimum: LogLevel, limit: number): Promise<LogEntry[]> {
    const session = await this.#session(caller, sessionId);
    const rows = await store.logsOf(this.deps.db, session.user_id, session.id, LOG_LEVELS[minimum], limit);
    return rows.map((row) => ({
      timestamp: row.created_at,
      level: LEVEL_NAMES[row.level] ?? 'INFO',
      message: row.message,
      attributes: parseObject(row.attributes),
    }));
  }

  async metrics(caller: Caller, sessionId: string): Promise<Metrics> {
    const session = await this.#session(caller, sessionId);
    const totals = await store.sessionTotals(this.deps.db, session.user_id, session.id);
    return {
      session_id: session.id,
      message_count: totals.messageCount,
      total_tokens: totals.promptTokens + totals.completionTokens,
      average_latency_ms: totals.averageLatencyMs,
      error_count: totals.errorCount,
      tool_call_count: totals.toolCallCount,
    };
  }

  /** Data export: the user's sessions with their transcripts, spans and logs. */
  async exportOf(userId: string) {
    const { db } = this.deps;
    const sessions = await store.sessionsOf(db, userId);
    const messages = await store.messagesOf(
      db,
      userId,
      sessions.map((s) => s.id),
    );
    return Promise.all(
      sessions.map(async (row) => ({
        ...toSession(row),
        messages: messages.filter((m) => m.session_id === row.id).map(toMessage),
        traces: (await store.spansOf(db, userId, row.id, Number.MAX_SAFE_INTEGER)).map(toTrace),
        logs: (await store.logsOf(db, userId, row.id, 0, Number.MAX_SAFE_INTEGER)).map((log) => ({
          timestamp: log.created_at,
          level: LEVEL_NAMES[log.level] ?? 'INFO',
          message: log.message,
          attributes: parseObject(log.attributes),
        })),
      })),
    );
  }

  async #session(caller: Caller, id: string): Promise<store.SessionRow> {
    const row = await store.findSession(this.deps.db, personOrMissing(caller, id), id);
    if (!row) throw sessionNotFound(id);
    return row;
  }

  /**
   * The session for a turn: as a turn was last admitted to it here, if that was the caller's, else read (and held).
   * Only what turns read of a row is sure to be current: whose it is and its conversation.
   */
  async #heldSession(caller: Caller, id: string): Promise<store.SessionRow> {
    const userId = personOrMissing(caller, id);
    const now = this.deps.now().getTime();
    const held = this.#held.get(id, now);
    if (held?.user_id === userId) return held;
    const row = await this.#held.read(id, now, () => store.findSession(this.deps.db, userId, id));
    if (!row) throw sessionNotFound(id);
    return row;
  }

  #keepSpan(sessionId: string, span: FinishedSpan): void {
    const userId = this.#running.get(sessionId)?.userId;
    // Only a turn running here names a session in its trace; a span that outlives its turn has no one to keep it.
    if (userId === undefined) {
      this.deps.logger.debug({ sessionId }, 'playground span outside a turn not kept');
      return;
    }
    const write = store
      .insertSpan(this.deps.db, userId, {
        span_id: span.spanId,
        trace_id: span.traceId,
        parent_span_id: span.parentSpanId,
        session_id: sessionId,
        operation: span.name,
        status: span.status,
        duration_ms: span.durationMs,
        attributes: JSON.stringify(span.attributes),
        started_at: span.startedAt,
      })
      // A session deleted while its turn ran has nowhere to keep the span.
      .catch((err: unknown) => this.deps.logger.debug({ err, sessionId }, 'playground span not kept'))
      .finally(() => this.#spanWrites.delete(write));
    this.#spanWrites.add(write);
  }

  /** The user's message of a turn, and the line that logs its start. */
  async #recordAsked(session: store.SessionRow, message: string, started: Date): Promise<void> {
    await store.appendMessage(this.deps.db, session.user_id, {
      id: randomUUID(),
      session_id: session.id,
      role: 'user',
      content: message,
      tool_calls: '[]',
      tool_call_count: 0,
      cancelled: 0,
      error: null,
      prompt_tokens: 0,
      completion_tokens: 0,
      latency_ms: null,
      created_at: started.toISOString(),
    });
    await this.#log(session, 'INFO', 'turn started', { characters: message.length });
  }

  async #log(
    session: Pick<store.SessionRow, 'id' | 'user_id'>,
    level: LogLevel,
    message: string,
    attributes: Record<string, unknown>,
  ) {
    await store.appendLog(this.deps.db, session.user_id, {
      id: randomUUID(),
      session_id: session.id,
      level: LOG_LEVELS[level],
      message,
      attributes: JSON.stringify(attributes),
      created_at: this.deps.now().toISOString(),
    });
  }
}

/** The user a caller is; a service principal has no playground sessions (403). */
function personOf(caller: Caller): string {
  const userId = userIdOf(caller);
  if (userId === undefined) throw peopleOnly();
  return userId;
}

/** The user a caller is, for a named session: a service principal finds none (404, spec "Errors" 11). */
function personOrMissing(caller: Caller, sessionId: string): string {
  const userId = userIdOf(caller);
  if (userId === undefined) throw sessionNotFound(sessionId);
  return userId;
}
