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

  /**
   * Events across every user, newest first: an administrator's listing, unscoped by design (its route admits only
   * callers holding `admin` on the system). `filter.userId` narrows it to one user's events.
   */
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
   * Erasure: what the log keeps of a person is what the trail needs — which event, when, its outcome, and who acted
   * as a pseudonym — and nothing that identifies or describes them. So:
   *
   * - every event the user did or that concerns them (actor or subject) loses its address and user agent, and
   *   keeps only the details in the service's own vocabulary (`KEPT_DETAILS`); the user's id becomes `pseudonym`;
   * - so do the events of the service principals the user created (a principal's id is the name the user gave it),
   *   for as long as the user had them; the principal's id becomes a pseudonym of its own;
   * - in anyone else's events, a detail naming the user — their id or one of `aliases` (username, email), compared
   *   whole and case-insensitively, bare or as `user:<value>` — becomes the pseudonym.
   *
   * Returns how many events changed. The hash key is read through the service's own handle: when `db` is a
   * transaction on SQLite (a single connection), call `pseudonym()` once before opening it.
   */
  async anonymize(userId: string, db: Executor = this.db, aliases: string[] = []): Promise<number> {
    const pseudonym = await this.pseudonym(userId);
    const changed = new Set<string>();

    const own = await db
      .selectFrom('audit_log')
      .select(['id', 'type', 'actor_id', 'details'])
      .where((eb) => eb.or([eb('actor_id', '=', userId), eb('subject_id', '=', userId)]))
      .orderBy('id')
      .execute();
    const principals = principalsOf(own, userId);
    await this.#scrub(db, own);
    for (const column of ['actor_id', 'subject_id'] as const) {
      await db
        .updateTable('audit_log')
        .set({ [column]: pseudonym })
        .where(column, '=', userId)
        .execute();
    }
    for (const row of own) changed.add(row.id);

    for (const [serviceId, spans] of principals) {
      const subject = `service_principal:${serviceId}`;
      const rows = (
        await db
          .selectFrom('audit_log')
          .select(['id', 'type', 'actor_id', 'details'])
          .where((eb) =>
            eb.or([
              eb('actor_id', '=', subject),
              eb.and([eb('type', '=', 'client_credentials.failed'), eb('details', 'like', `%${serviceId}%`)]),
            ]),
          )
          .execute()
      ).filter(
        (row) =>
          (row.actor_id === subject || detailsOf(row).service_id === serviceId) &&
          spans.some(([from, to]) => row.id >= from && (to === undefined || row.id <= to)),
      );
      if (rows.length === 0) continue;
      await this.#scrub(db, rows);
      const ids = rows.filter((row) => row.actor_id === subject).map((row) => row.id);
      const principalPseudonym = `service_principal:${await this.pseudonym(subject)}`;
      for (const chunk of chunksOf(ids)) {
        await db.updateTable('audit_log').set({ actor_id: principalPseudonym }).where('id', 'in', chunk).execute();
      }
      for (const row of rows) changed.add(row.id);
    }

    const names = [...new Set([userId, ...aliases].filter((a) => a.length > 0).map((a) => a.toLowerCase()))];
    const candidates = await db
      .selectFrom('audit_log')
      .select(['id', 'details'])
      // A cheap superset (LIKE's own wildcards only widen it): each value is then compared whole below.
      .where((eb) => eb.or(names.map((name) => eb(eb.fn<string>('lower', ['details']), 'like', `%${name}%`))))
      .execute();
    for (const row of candidates) {
      const details = detailsOf(row);
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

  /** Drops the address, user agent and every detail outside `KEPT_DETAILS` of these events. */
  async #scrub(db: Executor, rows: readonly { id: string; details: string }[]): Promise<void> {
    // Events mostly keep one of a few detail sets ({method: 'password'}, {}…): one statement per set, not per event.
    const byDetails = new Map<string, string[]>();
    for (const row of rows) {
      const kept = JSON.stringify(
        Object.fromEntries(Object.entries(detailsOf(row)).filter(([key]) => KEPT_DETAILS.has(key))),
      );
      byDetails.set(kept, [...(byDetails.get(kept) ?? []), row.id]);
    }
    for (const [details, ids] of byDetails) {
      for (const chunk of chunksOf(ids)) {
        await db
          .updateTable('audit_log')
          .set({ ip_address: null, user_agent: null, details })
          .where('id', 'in', chunk)
          .execute();
      }
    }
  }
}

/**
 * The details an erased person's events keep: how, why, which kind, how many — values from the service's own
 * vocabulary that say what happened. Everything else goes: ids (a service principal's is the name its owner gave
 * it), names, addresses, anything a person typed. A new detail is dropped on erasure until it is listed here.
 */
const KEPT_DETAILS: ReadonlySet<string> = new Set([
  'method',
  'reason',
  'consent_type',
  'granted',
  'format',
  'fields',
  'authentication_mode',
  'inherit_permissions',
  'generation',
  'grace_period_hours',
  'max_concurrent',
  'deactivated',
  'password_changed',
  'members',
  'members_added',
  'members_removed',
]);

/** Ids per statement: well under SQLite's and PostgreSQL's limits on bound parameters. */
const CHUNK = 500;

function chunksOf<T>(items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) chunks.push(items.slice(i, i + CHUNK));
  return chunks;
}

function detailsOf(row: { details: string }): Record<string, unknown> {
  return JSON.parse(row.details) as Record<string, unknown>;
}

/**
 * The service principals the user created, each with the spans of event ids during which the user had it: from its
 * creation to its deletion by the user, or to now. A principal's id may be taken again by someone else once it is
 * deleted, and that principal's events are not the user's. Event ids (UUIDv7) sort in the order they were recorded.
 */
function principalsOf(
  own: readonly { id: string; type: string; actor_id: string | null; details: string }[],
  userId: string,
): Map<string, [string, string | undefined][]> {
  const spans = new Map<string, [string, string | undefined][]>();
  for (const row of own) {
    if (row.actor_id !== userId || !row.type.startsWith('service_principal.')) continue;
    const serviceId = detailsOf(row).service_id;
    if (typeof serviceId !== 'string') continue;
    const list = spans.get(serviceId) ?? [];
    spans.set(serviceId, list);
    const open = list.at(-1);
    // Any event of the user's about the principal opens a span when none is open (its creation, normally).
    if (open === undefined || open[1] !== undefined) list.push([row.id, undefined]);
    if (row.type === 'service_principal.deleted') list.at(-1)![1] = row.id;
  }
  return spans;
}
