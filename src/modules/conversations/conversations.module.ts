import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import type { Module } from '../../ports/module.js';
import { ConversationsService } from './conversations.service.js';
import { userObject } from '../../ports/subjects.js';

export interface ConversationsModuleDeps {
  db: Kysely<Database>;
  /** Where ownership and sharing of conversations are written and checked. */
  authz: AuthzService;
  now: () => Date;
  logger: Logger;
  /** How long a conversation's row, once read, is held (ConversationsService); 0 or absent: not at all. */
  heldMs?: number;
}

/** Conversations and their messages, owned through the authorization service, with ranked full-text search. */
export function createConversationsModule(deps: ConversationsModuleDeps): Module<ConversationsService> {
  const service = new ConversationsService(deps.db, deps.authz, deps.now, {
    ...(deps.heldMs !== undefined && { heldMs: deps.heldMs }),
    unsent: (err) => deps.logger.warn({ err }, 'changed conversation not broadcast'),
  });
  return {
    name: 'conversations',
    service,
    shares: [service],
    erasure: [
      {
        step: 'authorization_tuples',
        run: async ({ user }) => service.removeAccess(await service.idsOwnedBy(userObject(user.id))),
      },
      { step: 'conversations', run: ({ user, db }) => service.deleteAllOwnedBy(userObject(user.id), db) },
    ],
    exports: [
      {
        section: 'conversations',
        collect: async (userId) =>
          (await service.allOwnedBy(userObject(userId))).map((c) => ({
            conversation_id: c.id,
            created_at: c.createdAt,
            message_count: c.messageCount,
            last_message_at: c.lastMessageAt,
          })),
      },
    ],
  };
}
