import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { putSettingIfAbsent } from '../system/system.store.js';
import type { AuditEvent, AuditEventType, AuditRecorder } from './audit.port.js';

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

/**
 * The audit log: append-only (nothing here updates or deletes an event, except erasure replacing a person's id by
 * a keyed hash of it). Recording never fails the operation that is being recorded: a failure is logged instead.
 */
export class AuditService implements AuditRecorder {
  #hashKey: Promise<string> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async record(event: AuditEvent): Promise<void> {
    try {
      await this.db
        .insertInto('audit_log')
        .values({
          id: randomUUID(),
          type: event.type,
          actor_id: event.actorId,
          subject_id: event.subjectId ?? null,
          ip_address: event.ipAddress ?? null,
          user_agent: event.userAgent?.slice(0, 512) ?? null,
          details: JSON.stringify(event.details ?? {}),
          created_at: this.now().toISOString(),
        })
        .execute();
    } catch (err) {
      this.logger.error({ err, event: event.type }, 'could not record an audit event');
    }
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
    return {
      total: Number(n),
      items: rows.map((row) => ({
        event_id: row.id,
        event_type: row.type as AuditEventType,
        timestamp: row.created_at,
        actor_id: row.actor_id,
        subject_id: row.subject_id,
        ip_address: row.ip_address,
        user_agent: row.user_agent,
        details: JSON.parse(row.details) as Record<string, unknown>,
      })),
    };
  }

  /** The keyed hash that stands for a person after erasure: stable (their events stay linked), not reversible. */
  async pseudonym(userId: string): Promise<string> {
    this.#hashKey ??= putSettingIfAbsent(this.db, 'audit_hash_key', randomBytes(32).toString('base64url'), this.now());
    return `anon:${createHmac('sha256', await this.#hashKey)
      .update(userId)
      .digest('hex')}`;
  }

  /** Replaces the user's id by its pseudonym in every event; returns how many events changed. */
  async anonymize(userId: string, db: Kysely<Database> = this.db): Promise<number> {
    const pseudonym = await this.pseudonym(userId);
    const actor = await db
      .updateTable('audit_log')
      .set({ actor_id: pseudonym })
      .where('actor_id', '=', userId)
      .executeTakeFirst();
    const subject = await db
      .updateTable('audit_log')
      .set({ subject_id: pseudonym })
      .where('subject_id', '=', userId)
      .executeTakeFirst();
    return Number(actor.numUpdatedRows) + Number(subject.numUpdatedRows);
  }
}
