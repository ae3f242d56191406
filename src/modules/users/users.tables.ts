import type { Selectable } from 'kysely';

export interface UsersTable {
  id: string;
  username: string;
  username_key: string;
  email: string | null;
  email_key: string | null;
  email_verified: number;
  name: string | null;
  /** JSON array of role names. */
  roles: string;
  active: number;
  /** argon2id PHC string; null for users who only sign in through SSO. */
  password_hash: string | null;
  created_at: string;
  updated_at: string;
  last_login: string | null;
}

export interface GroupsTable {
  id: string;
  /** Path-like name, e.g. `/engineering/backend`. */
  name: string;
  name_key: string;
  created_at: string;
  updated_at: string;
}

export interface GroupMembersTable {
  group_id: string;
  user_id: string;
  created_at: string;
}

/** An account at an external identity provider linked to a local user. */
export interface UserIdentitiesTable {
  issuer: string;
  subject: string;
  user_id: string;
  created_at: string;
}

export type UserRow = Selectable<UsersTable>;
export type GroupRow = Selectable<GroupsTable>;
