import type { ScimUserValuesTable, ScimUsersTable } from '../../src/modules/scim/scim.tables.js';
import type { UsersTable } from '../../src/modules/users/users.tables.js';

/** Rows written straight into the tables, bypassing the services: for schema tests and for seeding benchmarks. */

/** A `users` row: an active local user without password, email, name or roles unless `row` gives them. */
export function userRow(row: Pick<UsersTable, 'id' | 'username' | 'created_at'> & Partial<UsersTable>): UsersTable {
  return {
    username_key: row.username.toLowerCase(),
    email: null,
    email_key: null,
    email_verified: 0,
    name: null,
    roles: '[]',
    active: 1,
    password_hash: null,
    updated_at: row.created_at,
    last_login: null,
    ...row,
  };
}

/** A `scim_users` row: every attribute null unless `row` gives it. */
export function scimUserRow(row: Pick<ScimUsersTable, 'user_id'> & Partial<ScimUsersTable>): ScimUsersTable {
  return {
    external_id: null,
    display_name: null,
    nick_name: null,
    profile_url: null,
    title: null,
    user_type: null,
    preferred_language: null,
    locale: null,
    timezone: null,
    given_name: null,
    family_name: null,
    middle_name: null,
    honorific_prefix: null,
    honorific_suffix: null,
    email_type: null,
    email_display: null,
    email_primary: null,
    employee_number: null,
    cost_center: null,
    organization: null,
    division: null,
    department: null,
    manager_id: null,
    ...row,
  };
}

/** A `scim_user_values` row: the first value of its attribute, with no display, type or primary flag. */
export function scimUserValueRow(
  row: Pick<ScimUserValuesTable, 'user_id' | 'attribute' | 'value'> & Partial<ScimUserValuesTable>,
): ScimUserValuesTable {
  return { position: 0, value_key: row.value.toLowerCase(), display: null, type: null, primary_flag: null, ...row };
}
