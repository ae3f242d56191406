import { randomUUID } from 'node:crypto';
import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Broadcast } from '../../adapters/broadcast/port.js';
import type { ChatMessage, ToolCall } from '../../adapters/llm/port.js';
import type { Database } from '../../db/database.js';
import { CommonErrorCode, NotFoundError } from '../../errors.js';
import { RecentReads, SharedForgetting, kindAndId } from '../../ports/recent-reads.js';
import { prepared } from '../../db/prepared.js';
import { SEARCHED_ROLES, ftsMatchExpression, isPostgres, queryWords, searchKey } from '../../db/full-text.js';
import type { ConversationsTable, MessagesTable } from './conversations.tables.js';

export interface Conversation {
  id: string;
  owner: string;
  title: string;
  messageCount: number;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  createdAt: string;
  updatedAt: string;
  lastMessageAt: string | null;
}

export interface StoredMessage {
  id: string;
  seq: number;
  role: MessagesTable['role'];
  content: string;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  name?: string;
  promptTokens: number;
  completionTokens: number;
  createdAt: string;
}

export interface SearchHit {
  conversationId: string;
  title: string;
  messageId: string;
  role: MessagesTable['role'];
  snippet: string;
  createdAt: string;
}

type SearchRow = Pick<Selectable<MessagesTable>, 'id' | 'conversation_id' | 'role' | 'content' | 'created_at'> & {
  title: string;
};

export type NewMessage = ChatMessage & { promptTokens?: number; completionTokens?: number };

type ConversationRow = Selectable<ConversationsTable>;

/** A conversation the caller may not reach, or that is gone: the same 404 either way, so existence does not leak. */
const conversationNotFound = (id: string) =>
  new NotFoundError(`Conversation ${id} not found`, { code: CommonErrorCode.NotFound });

const toConversation = (row: ConversationRow): Conversation => ({
  id: row.id,
  owner: row.owner,
  title: row.title,
  messageCount: row.message_count,
  usage: {
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    totalTokens: row.prompt_tokens + row.completion_tokens,
  },
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  lastMessageAt: row.last_message_at,
});

const MESSAGE_COLUMNS = [
  'id',
  'conversation_id',
  'seq',
  'role',
  'content',
  'content_key',
  'tool_calls',
  'tool_call_id',
  'name',
  'prompt_tokens',
  'completion_tokens',
  'created_at',
] as const satisfies readonly (keyof MessagesTable)[];

const toMessage = (row: Selectable<MessagesTable>): StoredMessage => ({
  id: row.id,
  seq: row.seq,
  role: row.role,
  content: row.content,
  ...(row.tool_calls && { toolCalls: JSON.parse(row.tool_calls) as ToolCall[] }),
  ...(row.tool_call_id && { toolCallId: row.tool_call_id }),
  ...(row.name && { name: row.name }),
  promptTokens: row.prompt_tokens,
  completionTokens: row.completion_tokens,
  createdAt: row.created_at,
});

/** The message as the model sees it again on the next turn. */
export function toChatMessage(message: StoredMessage): ChatMessage {
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls && { toolCalls: message.toolCalls }),
      };
    case 'tool':
      return { role: 'tool', content: message.content, toolCallId: message.toolCallId ?? '', name: message.name ?? '' };
    default:
      return { role: message.role, content: message.content };
  }
}

/** How many distinct words of a query count; the rest are ignored. */
const MAX_QUERY_WORDS = 16;

/** About 160 characters of the message around the first place one of the words occurs. */
function snippet(content: string, words: string[]): string {
  const lower = content.toLowerCase();
  const found = words.map((word) => lower.indexOf(word)).filter((at) => at >= 0);
  const at = found.length > 0 ? Math.min(...found) : 0;
  const start = Math.max(0, at - 60);
  const text = content
    .slice(start, start + 160)
    .replace(/\s+/g, ' ')
    .trim();
  return `${start > 0 ? '…' : ''}${text}${start + 160 < content.length ? '…' : ''}`;
}

/**
 * The SQLite search, one statement whatever the words (they go in as one FTS5 match expression): compiled once,
 * and run on the connection at once while nothing holds it (`prepared`).
 */
const searchSqlite = prepared((db: Kysely<Database>, owner: string, match: string, limit: number) => ({
  compile: () =>
    sql<SearchRow>`
      select m.id, m.conversation_id, m.role, m.content, m.created_at, c.title
      from messages_search
      join messages_search_rows r on r.id = messages_search.rowid
      join messages m on m.id = r.message_id
      join conversations c on c.id = m.conversation_id
      where messages_search match ${match}
        and c.owner = ${owner} and m.role in (${sql.join([...SEARCHED_ROLES])})
      order by bm25(messages_search), m.created_at desc, m.id
      limit cast(${limit} as integer)`.compile(db),
}));

const HELD_CONVERSATIONS = 10_000;
/** Where instances tell each other of conversations to read again: `conversation:<id>`, or `owner:<subject>`. */
const CONVERSATIONS_CHANGED_CHANNEL = 'conversations-changed';

const conversationById = prepared((db: Kysely<Database>, id: string) =>
  db.selectFrom('conversations').selectAll().where('id', '=', id),
);

const conversationsOf = prepared((db: Kysely<Database>, owner: string, offset: number, limit: number) =>
  db
    .selectFrom('conversations')
    .selectAll()
    .where('owner', '=', owner)
    .orderBy('updated_at', 'desc')
    .orderBy('id')
    .offset(offset)
    .limit(limit),
);

/**
 * Conversations with the agent. Each belongs to the subject that started it (an `owner` tuple); reading one needs
 * `viewer` on it, and a conversation the caller may not see is reported as missing.
 */
export class ConversationsService {
  readonly #updated = new Set<(id: string) => void>();
  /**
   * Conversation rows as last read or changed here, by id: a turn that continues a conversation finds it without a
   * statement before its model is asked.
   */
  readonly #held: RecentReads<ConversationRow>;
  readonly #changes: SharedForgetting<`conversation:${string}` | `owner:${string}`>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly authz: AuthzService,
    private readonly now: () => Date = () => new Date(),
    options: {
      /**
       * How long a conversation's row, once read, answers `access` on this instance (0, the default: every call
       * reads it). Messages added here keep it current; those added elsewhere, and erasures, are told to every
       * instance through the broadcast, so rows may be held only where it reaches every instance.
       */
      heldMs?: number;
      /** Told of a change that could not be told to the other instances. */
      unsent?: (err: unknown) => void;
    } = {},
  ) {
    this.#held = new RecentReads(options.heldMs ?? 0, HELD_CONVERSATIONS);
    this.#changes = new SharedForgetting(
      CONVERSATIONS_CHANGED_CHANNEL,
      (message) => this.#forget(message),
      options.unsent ?? (() => undefined),
    );
  }

  /**
   * Tells the other instances of conversations that grow or go here, and reads afresh those that change on them,
   * through `broadcast`. Returns the stop.
   */
  shareForgetting(broadcast: Broadcast): () => void {
    return this.#changes.share(broadcast);
  }

  #forget(message: string): void {
    const { kind, id } = kindAndId(message);
    if (kind === 'conversation') this.#held.forget(id);
    else if (kind === 'owner') this.#held.forget((row) => row.owner === id);
  }

  /** Calls `listener` with a conversation's id each time messages are added to it here; returns the stop. */
  onUpdated(listener: (id: string) => void): () => void {
    this.#updated.add(listener);
    return () => this.#updated.delete(listener);
  }

  async create(owner: string, title: string): Promise<Conversation> {
    const at = this.now().toISOString();
    const row: ConversationRow = {
      id: randomUUID(),
      owner,
      title: title.replace(/\s+/g, ' ').trim().slice(0, 120) || 'New conversation',
      message_count: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      created_at: at,
      updated_at: at,
      last_message_at: null,
    };
    await this.db.insertInto('conversations').values(row).execute();
    await this.authz.write([{ user: owner, relation: 'owner', object: `conversation:${row.id}` }]);
    return toConversation(row);
  }

  /** The conversation if `subject` may `relation` it; otherwise 404, so existence does not leak. */
  async access(subject: string, id: string, relation: 'viewer' | 'owner' = 'viewer'): Promise<Conversation> {
    const now = this.now().getTime();
    const row = await this.#held.through(id, now, async () => (await conversationById(this.db, id))[0]);
    if (!row || !(await this.authz.check(subject, relation, `conversation:${id}`))) {
      throw conversationNotFound(id);
    }
    return toConversation(row);
  }

  /**
   * The conversation's messages. Keyed by conversation alone by design: reading one is decided by relationship
   * tuples (a viewer need not be the owner, and a principal may act for the owner), which no statement can join;
   * call it only with a conversation `access` admitted.
   */
  async messages(id: string): Promise<StoredMessage[]> {
    const rows = await this.db
      .selectFrom('messages')
      // Not selectAll(): on PostgreSQL that would also fetch the search vector.
      .select(MESSAGE_COLUMNS)
      .where('conversation_id', '=', id)
      .orderBy('seq')
      .execute();
    return rows.map(toMessage);
  }

  /**
   * Appends messages in order and adds their token counts to the conversation's: the conversation as `access`
   * answered it to a caller admitted as `owner`. Its row is changed by id and owner, and the messages go in only
   * once it was: a conversation that is not its owner's, or is gone, is a 404 and changes nothing.
   */
  async append(conversation: Pick<Conversation, 'id' | 'owner'>, messages: NewMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const { id, owner } = conversation;
    const at = this.now().toISOString();
    const promptTokens = messages.reduce((n, m) => n + (m.promptTokens ?? 0), 0);
    const completionTokens = messages.reduce((n, m) => n + (m.completionTokens ?? 0), 0);
    await this.db.transaction().execute(async (trx) => {
      const counted = await trx
        .updateTable('conversations')
        .set((eb) => ({
          message_count: eb('message_count', '+', messages.length),
          prompt_tokens: eb('prompt_tokens', '+', promptTokens),
          completion_tokens: eb('completion_tokens', '+', completionTokens),
          updated_at: at,
          last_message_at: at,
        }))
        .where('id', '=', id)
        .where('owner', '=', owner)
        .executeTakeFirst();
      if (Number(counted.numUpdatedRows) !== 1) throw conversationNotFound(id);
      const { last } = await trx
        .selectFrom('messages')
        .select((eb) => eb.fn.max<number | null>('seq').as('last'))
        .where('conversation_id', '=', id)
        .executeTakeFirstOrThrow();
      let seq = Number(last ?? 0);
      await trx
        .insertInto('messages')
        .values(
          messages.map((m) => ({
            id: randomUUID(),
            conversation_id: id,
            seq: ++seq,
            role: m.role,
            content: m.content,
            content_key: searchKey(m.content),
            tool_calls: m.role === 'assistant' && m.toolCalls?.length ? JSON.stringify(m.toolCalls) : null,
            tool_call_id: m.role === 'tool' ? m.toolCallId : null,
            name: m.role === 'tool' ? m.name : null,
            prompt_tokens: m.promptTokens ?? 0,
            completion_tokens: m.completionTokens ?? 0,
            created_at: at,
          })),
        )
        .execute();
    });
    this.#held.revise(id, (row) => ({
      ...row,
      message_count: row.message_count + messages.length,
      prompt_tokens: row.prompt_tokens + promptTokens,
      completion_tokens: row.completion_tokens + completionTokens,
      updated_at: at,
      last_message_at: at,
    }));
    await this.#changes.tellOthers(`conversation:${id}`);
    for (const listener of this.#updated) listener(id);
  }

  /** The subject's own conversations, most recently active first. */
  async list(owner: string, window: { offset: number; limit: number }): Promise<Conversation[]> {
    return (await conversationsOf(this.db, owner, window.offset, window.limit)).map(toConversation);
  }

  /** Every conversation the subject owns, oldest first (their data export; erasure of their checkpoints). */
  async allOwnedBy(owner: string): Promise<Conversation[]> {
    const rows = await this.db
      .selectFrom('conversations')
      .selectAll()
      .where('owner', '=', owner)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toConversation);
  }

  /** The ids of every conversation the subject owns (erasure of their checkpoints and tuples). */
  async idsOwnedBy(owner: string): Promise<string[]> {
    const rows = await this.db.selectFrom('conversations').select('id').where('owner', '=', owner).execute();
    return rows.map((row) => row.id);
  }

  /** Erasure: removes every relationship tuple on these conversations (ownership, sharing); returns how many. */
  async removeAccess(conversationIds: string[]): Promise<number> {
    let removed = 0;
    for (const id of conversationIds) removed += await this.authz.removeAllFor(`conversation:${id}`);
    return removed;
  }

  /**
   * Erasure (by owner): deletes the subject's conversations and their messages through `db` (the erasure's transaction);
   * returns how many conversations. Their checkpoints and tuples live elsewhere and are the caller's to remove.
   */
  async deleteAllOwnedBy(owner: string, db: Kysely<Database> | Transaction<Database>): Promise<number> {
    const owned = db.selectFrom('conversations').select('id').where('owner', '=', owner);
    await db.deleteFrom('messages').where('conversation_id', 'in', owned).execute();
    const result = await db.deleteFrom('conversations').where('owner', '=', owner).executeTakeFirst();
    await this.#changes.tell(`owner:${owner}`);
    return Number(result.numDeletedRows);
  }

  /**
   * Messages (the user's and the agent's) of the subject's own conversations containing every word of the query,
   * best match first: by bm25() on SQLite, by ts_rank() on PostgreSQL, then newest first. Words are matched whole
   * and case-insensitively, as src/db/full-text.ts cuts them; nothing in the query is read as search syntax.
   *
   * On SQLite the limit is an expression, not a bare parameter: FTS5 reads a bare one's value when the statement is
   * planned, and SQLite then plans the statement again whenever a value is bound to it (47 µs a search instead of 5
   * on an empty index, measured; over 100 µs under load).
   */
  async search(owner: string, query: string, limit: number): Promise<SearchHit[]> {
    const words = queryWords(query, MAX_QUERY_WORDS);
    if (!words?.length) return [];
    const rows = isPostgres(this.db)
      ? (
          await sql<SearchRow>`
          select m.id, m.conversation_id, m.role, m.content, m.created_at, c.title
          from messages m
          join conversations c on c.id = m.conversation_id
          where m.search_vector @@ plainto_tsquery('simple', ${words.join(' ')})
            and c.owner = ${owner} and m.role in (${sql.join([...SEARCHED_ROLES])})
          order by ts_rank(
            m.search_vector, ${sql.join(
              words.map((word) => sql`plainto_tsquery('simple', ${word})`),
              sql` || `,
            )}, 1
          ) desc, m.created_at desc, m.id
          limit ${limit}`.execute(this.db)
        ).rows
      : await searchSqlite(this.db, owner, ftsMatchExpression(words), limit);
    return rows.map((row) => ({
      conversationId: row.conversation_id,
      title: row.title,
      messageId: row.id,
      role: row.role,
      snippet: snippet(row.content, words),
      createdAt: row.created_at,
    }));
  }
}
