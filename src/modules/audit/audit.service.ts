import { createHmac, randomBytes } from 'node:crypto';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { putSettingIfAbsent } from '../system/index.js';
import type { AuditEvent, AuditEventType, AuditRecorder } from '../../ports/audit.js';
import type { AuditLogTable } from './audit.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;

export interface AuditEntry {
  event_id: string;
  event_type: AuditEventType;
  timestamp: string;
  actor_id: string | null;
  subject_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  details: Record<string, unknown>;
}

export interface AuditFilter {
  /** Events the user did or that concern the user. */
  userId?: string;
  type?: string;
  from?: string;
  to?: string;
}

function toEntry(row: Selectable<AuditLogTable>): AuditEntry {
  return {
    event_id: row.id,
    event_type: row.type as AuditEventType,
    timestamp: row.created_at,
    actor_id: row.actor_id,
    subject_id: row.subject_id,
    ip_address: row.ip_address,
    user_agent: row.user_agent,
    details: JSON.parse(row.details) as Record<string, unknown>,
  };
}

/**
 * The audit log: append-only (nothing here updates or deletes an event, except erasure replacing a person's id by
 * a keyed hash of it). Recording never fails the operation that is being recorded: a failure is logged instead.
 */
export class AuditService implements AuditRecorder {
  #hashKey: Promise<string> | undefined;
  #lastId = { ms: 0, counter: 0 };

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async record(event: AuditEvent): Promise<void> {
    try {
      await this.append(event);
    } catch (err) {
      this.logger.error({ err, event: event.type }, 'could not record an audit event');
    }
  }

  /**
   * Appends an event and returns its id. Unlike `record`, a failure throws: this is for an event that must be
   * written with the change it describes, in the same transaction (the erasure's own record).
   */
  async append(event: AuditEvent, db: Executor = this.db, id: string = this.newId()): Promise<string> {
    await db
      .insertInto('audit_log')
      .values({
        id,
        type: event.type,
        actor_id: event.actorId,
        subject_id: event.subjectId ?? null,
        ip_address: event.ipAddress ?? null,
        user_agent: event.userAgent?.slice(0, 512) ?? null,
        details: JSON.stringify(event.details ?? {}),
        created_at: this.now().toISOString(),
      })
      .execute();
    return id;
  }

  async list(
    filter: AuditFilter,
    window: { offset: number; limit: number },
  ): Promise<{ items: AuditEntry[]; total: number }> {
    let query = this.db.selectFrom('audit_log');
    if (filter.userId)
      query = query.where((eb) => eb.or([eb('actor_id', '=', filter.userId!), eb('subject_id', '=', filter.userId!)]));
    if (filter.type) query = query.where('type', '=', filter.type);
    if (filter.from) query = query.where('created_at', '>=', filter.from);
    if (filter.to) query = query.where('created_at', '<', filter.to);
    const { n } = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = await query
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(window.offset)
      .limit(window.limit)
      .execute();
    return { total: Number(n), items: rows.map(toEntry) };
  }

  /** Every event the user did or that concerns the user, oldest first (their data export). */
  async eventsOf(userId: string): Promise<AuditEntry[]> {
    const rows = await this.db
      .selectFrom('audit_log')
      .selectAll()
      .where((eb) => eb.or([eb('actor_id', '=', userId), eb('subject_id', '=', userId)]))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toEntry);
  }

  /**
   * A UUIDv7 (RFC 9562) whose order is the order events were recorded in: events of one millisecond are told
   * apart by a counter (the "monotonic random" method), so the log reads in sequence even under a frozen clock.
   */
  newId(): string {
    let ms = Math.max(this.now().getTime(), this.#lastId.ms);
    let counter = ms === this.#lastId.ms ? this.#lastId.counter + 1 : 0;
    if (counter > 0xfff) {
      ms += 1;
      counter = 0;
    }
    this.#lastId = { ms, counter };
    const bytes = randomBytes(16);
    bytes.writeUIntBE(ms, 0, 6);
    bytes.writeUInt16BE(0x7000 | counter, 6);
    bytes[8] = 0x80 | (bytes[8]! & 0x3f);
    const hex = bytes.toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  /** The keyed hash that stands for a person after erasure: stable (their events stay linked), not reversible. */
  async pseudonym(userId: string): Promise<string> {
    this.#hashKey ??= putSettingIfAbsent(
      this.db,
      'audit_hash_key',
      randomBytes(32).toString('base64url'),
      this.now(),
    ).catch((err: unknown) => {
      this.#hashKey = undefined; // a database hiccup must not stick: read the key again next time
      throw err;
    });
    return `anon:${createHmac('sha256', await this.#hashKey)
      .update(userId)
      .digest('hex')}`;
  }

  /**
   * Replaces the user's id by its pseudonym in every event, and, in event details, every value naming the user:
   * their id or one of `aliases` (username, email), compared whole and case-insensitively, bare or as
   * `user:<value>`. Returns how many events changed.
   *
   * The hash key is read through the service's own handle: when `db` is a transaction on SQLite (a single
   * connection), call `pseudonym()` once before opening it.
   */
  async anonymize(userId: string, db: Executor = this.db, aliases: string[] = []): Promise<number> {
    const pseudonym = await this.pseudonym(userId);
    const changed = new Set<string>();
    for (const column of ['actor_id', 'subject_id'] as const) {
      const rows = await db.selectFrom('audit_log').select('id').where(column, '=', userId).execute();
      if (rows.length === 0) continue;
      for (const row of rows) changed.add(row.id);
      await db
        .updateTable('audit_log')
        .set({ [column]: pseudonym })
        .where(column, '=', userId)
        .execute();
    }

    const names = [...new Set([userId, ...aliases].filter((a) => a.length > 0).map((a) => a.toLowerCase()))];
    const candidates = await db
      .selectFrom('audit_log')
      .select(['id', 'details'])
      // A cheap superset (LIKE's own wildcards only widen it): each value is then compared whole below.
      .where((eb) => eb.or(names.map((name) => eb(eb.fn<string>('lower', ['details']), 'like', `%${name}%`))))
      .execute();
    for (const row of candidates) {
      const details = JSON.parse(row.details) as Record<string, unknown>;
      let scrubbed = false;
      for (const [key, value] of Object.entries(details)) {
        if (typeof value !== 'string') continue;
        const lower = value.toLowerCase();
        if (names.includes(lower)) details[key] = pseudonym;
        else if (lower.startsWith('user:') && names.includes(lower.slice('user:'.length)))
          details[key] = `user:${pseudonym}`;
        else continue;
        scrubbed = true;
      }
      if (!scrubbed) continue;
      await db
        .updateTable('audit_log')
        .set({ details: JSON.stringify(details) })
        .where('id', '=', row.id)
        .execute();
      changed.add(row.id);
    }
    return changed.size;
  }
}
