import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Database } from '../../db/database.js';
import type { Module } from '../../ports/module.js';
import { ConversationsService } from './conversations.service.js';

export interface ConversationsModuleDeps {
  db: Kysely<Database>;
  /** Where ownership and sharing of conversations are written and checked. */
  authz: AuthzService;
  now: () => Date;
}

/** Conversations and their messages, owned through the authorization service, with ranked full-text search. */
export function createConversationsModule(deps: ConversationsModuleDeps): Module<ConversationsService> {
  return { name: 'conversations', service: new ConversationsService(deps.db, deps.authz, deps.now) };
}
