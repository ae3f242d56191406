import type { AuthzService } from '../../adapters/authz/port.js';
import type { McpPolicy } from '../../mcp/policy.js';
import type { ApiKeysService } from '../api-keys/index.js';
import type { AuditService } from '../audit/index.js';
import type { AuthService } from '../auth/index.js';
import { principalObject, userObject } from '../../ports/subjects.js';
import type { ConversationsService } from '../conversations/index.js';
import type { ServicePrincipalsService } from '../service-principals/index.js';
import type { UsersService } from '../users/index.js';
import * as store from './data-subject.store.js';
import type { ErasureContext, ErasureStep } from './erasure.service.js';

export interface ErasureStepDeps {
  auth: AuthService;
  users: UsersService;
  apiKeys: ApiKeysService;
  principals: ServicePrincipalsService;
  conversations: ConversationsService;
  authz: AuthzService;
  audit: AuditService;
  policy: McpPolicy;
  /** Forgets a conversation's LangGraph checkpoints (thread id = conversation id). */
  deleteThread: (threadId: string) => Promise<void>;
}

const outside = (
  name: string,
  run: (context: ErasureContext) => Promise<number>,
  reports: ErasureStep['reports'] = 'deleted',
): ErasureStep => ({ name, inTransaction: false, reports, run });

const inside = (
  name: string,
  run: (context: ErasureContext) => Promise<number>,
  reports: ErasureStep['reports'] = 'deleted',
): ErasureStep => ({ name, inTransaction: true, reports, run });

/**
 * What erasing a user removes, in order. A module that keeps personal data adds its step here.
 *
 * 1. Other stores first (checkpoints, authorization tuples, rate-limit counters): none of them ends the user's
 *    credentials, so after a failure there the user can still repeat the request.
 * 2. One database transaction: every table, then the erasure's own audit record. A failure rolls all of it back.
 * 3. Last, still inside the transaction although it is another store: the session store. Deleting the sessions
 *    ends every token and cookie, so it happens only once nothing else can fail but the commit; if it fails,
 *    the database is rolled back and the caller's credential still works for the retry.
 */
export function erasureSteps(deps: ErasureStepDeps): ErasureStep[] {
  const { auth, users, apiKeys, principals, conversations, authz, audit, policy } = deps;
  const conversationIds = async (context: ErasureContext) =>
    (await conversations.allOwnedBy(userObject(context.user.id))).map((c) => c.id);

  return [
    outside('checkpoints', async (context) => {
      const ids = await conversationIds(context);
      for (const id of ids) await deps.deleteThread(id);
      return ids.length;
    }),
    outside('authorization_tuples', async (context) => {
      let removed = await conversations.removeAccess(await conversationIds(context));
      for (const id of await principals.idsOwnedBy(context.user.id)) {
        removed += await authz.removeAllFor(principalObject(id));
      }
      return removed + (await authz.removeAllFor(userObject(context.user.id)));
    }),
    outside('rate_limit_counters', async ({ user }) => {
      const logins = await auth.forgetLoginFailures([user.username, ...(user.email ? [user.email] : [])]);
      return logins + (await policy.forget(userObject(user.id)));
    }),

    inside('refresh_tokens', ({ user, db }) => auth.deleteRefreshTokensOf(user.id, db)),
    inside('api_keys', ({ user, db }) => apiKeys.deleteAllOf(user.id, db)),
    inside('service_principals', ({ user, db }) => principals.deleteAllOwnedBy(user.id, db)),
    inside('conversations', ({ user, db }) => conversations.deleteAllOwnedBy(userObject(user.id), db)),
    // The playground and the workflow builder keep no data yet; their modules delete the user's here.
    inside('playground_sessions', () => Promise.resolve(0)),
    inside('workflows', () => Promise.resolve(0)),
    inside('preferences', ({ user, db }) => store.deletePreferences(db, user.id)),
    inside('consents', ({ user, db }) => store.deleteConsents(db, user.id)),
    inside(
      'audit_logs',
      ({ user, db }) => audit.anonymize(user.id, db, [user.username, ...(user.email ? [user.email] : [])]),
      'anonymized',
    ),
    // Other people's SCIM records may name the user as their manager (not a foreign key: a provider may name a
    // manager it provisions later), so those references are cleared rather than left pointing at the erased id.
    inside(
      'manager_references',
      async ({ user, db }) => {
        const result = await db
          .updateTable('scim_users')
          .set({ manager_id: null })
          .where('manager_id', '=', user.id)
          .executeTakeFirst();
        return Number(result.numUpdatedRows);
      },
      'anonymized',
    ),
    inside('profile', ({ user, db }) => users.erase(user.id, db)),
    inside(
      'erasure_record',
      async ({ pseudonym, client, counts, db, recordId }) => {
        await audit.append(
          {
            type: 'account.erased',
            actorId: pseudonym,
            ipAddress: client.ip,
            userAgent: client.userAgent,
            details: counts,
          },
          db,
          recordId,
        );
        return 1;
      },
      'none',
    ),
    inside('sessions', ({ user }) => auth.deleteSessionsOf(user.id)),
  ];
}
