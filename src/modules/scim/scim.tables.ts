import type { Selectable } from 'kysely';

/** What SCIM says about a local user beyond the columns of `users` (see migrations/0006_scim.ts). */
export interface ScimUsersTable {
  user_id: string;
  external_id: string | null;
  display_name: string | null;
  nick_name: string | null;
  profile_url: string | null;
  title: string | null;
  user_type: string | null;
  preferred_language: string | null;
  locale: string | null;
  timezone: string | null;
  given_name: string | null;
  family_name: string | null;
  middle_name: string | null;
  honorific_prefix: string | null;
  honorific_suffix: string | null;
  /** SCIM sub-attributes of the primary email, whose value is users.email. */
  email_type: string | null;
  email_display: string | null;
  /** null: not stated by the client; 0/1: stated false/true. */
  email_primary: number | null;
  employee_number: string | null;
  cost_center: string | null;
  organization: string | null;
  division: string | null;
  department: string | null;
  manager_id: string | null;
}

/** One value of a multi-valued User attribute of the value/display/type/primary shape. */
export interface ScimUserValuesTable {
  user_id: string;
  /** `emails` (beyond the primary), `phoneNumbers`, `ims`, `photos`, `entitlements`, `roles`, `x509Certificates`. */
  attribute: string;
  position: number;
  value: string;
  /** Lower-cased value: what case-insensitive filters compare. */
  value_key: string;
  display: string | null;
  type: string | null;
  primary_flag: number | null;
}

export interface ScimUserAddressesTable {
  user_id: string;
  position: number;
  formatted: string | null;
  street_address: string | null;
  locality: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
  type: string | null;
  primary_flag: number | null;
}

/** A group SCIM manages: the displayName as the client sent it (groups.name is derived from it). */
export interface ScimGroupsTable {
  group_id: string;
  display_name: string;
  display_name_key: string;
  external_id: string | null;
}

/** An authorization tuple a deactivation removed, kept to restore on reactivation. */
export interface ScimSuspendedTuplesTable {
  user_id: string;
  relation: string;
  object: string;
  created_at: string;
}

export type ScimUserRow = Selectable<ScimUsersTable>;
export type ScimUserValueRow = Selectable<ScimUserValuesTable>;
export type ScimUserAddressRow = Selectable<ScimUserAddressesTable>;
export type ScimGroupRow = Selectable<ScimGroupsTable>;
