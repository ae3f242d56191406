import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { UnauthorizedError } from '../../errors.js';
import type { AuditService } from '../audit/index.js';
import { CallerErrorCode, type ClientInfo } from '../../ports/caller.js';
import type { ExportPart, ExportSections } from '../../ports/data-export.js';
import type { User, UsersService } from '../users/index.js';
import * as store from './data-subject.store.js';
import type { ConsentType } from './data-subject.tables.js';

/** The user's data as GET /api/v1/users/me/data reports it and the export files contain it (spec "DataExport"). */
export interface DataExport extends ExportSections {
  export_id: string;
  user_id: string;
  username: string;
  email: string | null;
  export_timestamp: string;
  profile: {
    user_id: string;
    username: string;
    email: string | null;
    name: string | null;
    created_at: string;
    preferences: Record<string, unknown>;
  };
  consents: {
    consent_id: string;
    consent_type: ConsentType;
    granted: boolean;
    timestamp: string;
    ip_address: string | null;
  }[];
}

export interface ProfileChanges {
  name?: string;
  email?: string;
  preferences?: Record<string, unknown>;
}

export interface UpdatedProfile {
  user_id: string;
  username: string;
  name: string | null;
  email: string | null;
  preferences: Record<string, unknown>;
  updated_at: string;
  storage_note: string;
}

export interface ConsentEntry {
  granted: boolean;
  timestamp: string;
  ip_address: string | null;
  user_agent: string | null;
}

/** The decision in force for each consent type the user has decided on; a type never decided is not granted. */
export interface ConsentState {
  user_id: string;
  consents: Partial<Record<ConsentType, ConsentEntry>>;
}

export interface DataSubjectDeps {
  db: Kysely<Database>;
  users: UsersService;
  audit: AuditService;
  /** The sections of the export other modules keep (sessions, conversations, audit log). */
  exports: readonly ExportPart[];
  now?: () => Date;
}

const STORAGE_NOTE =
  'Your profile and preferences are kept in this service’s database and are used only to run your account. ' +
  'Changes apply at once; earlier values are not kept. Export your data at /api/v1/users/me/export.';
/** Appends that race for the same position are retried this many times (PostgreSQL; SQLite never races). */
const APPEND_ATTEMPTS = 3;

/**
 * Data-subject rights of the authenticated user over their own data: access and portability (export),
 * rectification (profile) and consent. Erasure is the erasure service's.
 */
export class DataSubjectService {
  private readonly now: () => Date;

  constructor(private readonly deps: DataSubjectDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  async exportData(userId: string): Promise<DataExport> {
    const { db, exports } = this.deps;
    const user = await this.#user(userId);
    const [preferences, consents, collected] = await Promise.all([
      store.findPreferences(db, userId),
      store.consentHistory(db, userId),
      Promise.all(exports.map(async (part) => [part.section, await part.collect(userId)] as const)),
    ]);
    const sections: Partial<ExportSections> = Object.fromEntries(collected);
    return {
      export_id: randomUUID(),
      user_id: user.id,
      username: user.username,
      email: user.email,
      export_timestamp: this.now().toISOString(),
      profile: {
        user_id: user.id,
        username: user.username,
        email: user.email,
        name: user.name,
        created_at: user.createdAt,
        preferences: parsePreferences(preferences?.preferences),
      },
      sessions: sections.sessions ?? [],
      conversations: sections.conversations ?? [],
      playground_sessions: sections.playground_sessions ?? [],
      workflows: sections.workflows ?? [],
      oauth_grants: sections.oauth_grants ?? [],
      mcp_tasks: sections.mcp_tasks ?? [],
      mcp_connections: sections.mcp_connections ?? [],
      consents: consents.map((c) => ({
        consent_id: c.id,
        consent_type: c.consent_type,
        granted: c.granted === 1,
        timestamp: c.created_at,
        ip_address: c.ip_address,
      })),
      audit_log: sections.audit_log ?? [],
    };
  }

  /** Records that the user downloaded their data (the access view itself is not an export). */
  recordExport(userId: string, format: 'json' | 'csv', client: ClientInfo): Promise<void> {
    return this.deps.audit.record({
      type: 'data.exported',
      actorId: userId,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { format },
    });
  }

  /** Rectification: name, email and preferences change together or not at all. */
  async updateProfile(userId: string, changes: ProfileChanges, client: ClientInfo): Promise<UpdatedProfile> {
    const at = this.now().toISOString();
    const before = await this.#user(userId);
    // Everything inside goes through `trx`: on SQLite the transaction holds the only connection.
    const { user, preferences, changed } = await this.deps.db.transaction().execute(async (trx) => {
      const user = await this.deps.users.updateProfile(
        userId,
        {
          ...(changes.name !== undefined && { name: changes.name }),
          ...(changes.email !== undefined && { email: changes.email }),
        },
        trx,
      );
      if (!user) throw new UnauthorizedError('No such user', { code: CallerErrorCode.InvalidToken });
      const changed: string[] = (['name', 'email'] as const).filter((field) => user[field] !== before[field]);
      let stored = await store.findPreferences(trx, userId);
      if (changes.preferences !== undefined) {
        const json = JSON.stringify(changes.preferences);
        if (json !== stored?.preferences) {
          await store.putPreferences(trx, userId, json, at);
          stored = { user_id: userId, preferences: json, updated_at: at };
          changed.push('preferences');
        }
      }
      return { user, preferences: stored, changed };
    });
    if (changed.length > 0) {
      await this.deps.audit.record({
        type: 'profile.updated',
        actorId: userId,
        ipAddress: client.ip,
        userAgent: client.userAgent,
        // Which fields, never their values: the log outlives a rectification.
        details: { fields: changed.join(',') },
      });
    }
    return {
      user_id: user.id,
      username: user.username,
      name: user.name,
      email: user.email,
      preferences: parsePreferences(preferences?.preferences),
      // Whichever changed last: ISO timestamps written by the service compare as text.
      updated_at: preferences && preferences.updated_at > user.updatedAt ? preferences.updated_at : user.updatedAt,
      storage_note: STORAGE_NOTE,
    };
  }

  async consents(userId: string): Promise<ConsentState> {
    await this.#user(userId);
    return this.#consentState(userId);
  }

  /** Records a decision (the history keeps every one) and returns the decisions now in force. */
  async recordConsent(
    userId: string,
    consentType: ConsentType,
    granted: boolean,
    client: ClientInfo,
  ): Promise<ConsentState> {
    await this.#user(userId);
    const row = {
      id: randomUUID(),
      user_id: userId,
      consent_type: consentType,
      granted: granted ? 1 : 0,
      ip_address: client.ip,
      user_agent: client.userAgent?.slice(0, 512) ?? null,
      created_at: this.now().toISOString(),
    };
    for (let attempt = 1; ; attempt++) {
      try {
        await this.deps.db.transaction().execute((trx) => store.appendConsent(trx, row));
        break;
      } catch (error) {
        if (!isUniqueViolation(error) || attempt >= APPEND_ATTEMPTS) throw error;
      }
    }
    await this.deps.audit.record({
      type: 'consent.changed',
      actorId: userId,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      details: { consent_id: row.id, consent_type: consentType, granted },
    });
    return this.#consentState(userId);
  }

  async #consentState(userId: string): Promise<ConsentState> {
    const consents: ConsentState['consents'] = {};
    // Oldest first, so the latest decision per type is the one left standing.
    for (const row of await store.consentHistory(this.deps.db, userId)) {
      consents[row.consent_type] = {
        granted: row.granted === 1,
        timestamp: row.created_at,
        ip_address: row.ip_address,
        user_agent: row.user_agent,
      };
    }
    return { user_id: userId, consents };
  }

  /** The caller's account; a credential that outlived it (it is being erased) is refused. */
  async #user(userId: string): Promise<User> {
    const user = await this.deps.users.get(userId);
    if (!user) throw new UnauthorizedError('No such user', { code: CallerErrorCode.InvalidToken });
    return user;
  }
}

function parsePreferences(json: string | undefined): Record<string, unknown> {
  return json === undefined ? {} : (JSON.parse(json) as Record<string, unknown>);
}
