import type { Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { Database } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type {
  McpConnectionAccountsTable,
  McpConnectionSignInsTable,
  McpConnectionToolsTable,
  McpConnectionsTable,
} from './connections.tables.js';

type Executor = Kysely<Database> | Transaction<Database>;
export type ConnectionRow = Selectable<McpConnectionsTable>;
export type ToolPinRow = Selectable<McpConnectionToolsTable>;
export type AccountRow = Selectable<McpConnectionAccountsTable>;

/*
 * A connection is its owner's (`owner_id`), or shared (`owner_id` ''): every statement names the owner key it was
 * admitted for, so that a personal connection of someone else is as missing as one that never existed. What hangs
 * off a connection (pinned tools) is reached through a connection the caller was admitted to; accounts and
 * sign-ins name their user.
 */

/** The owner key of a shared connection. */
export const SHARED = '';

/**
 * The connections a user may come across: their own and the shared ones (whose use the caller then checks). Asked
 * on every listing of tools, so prepared: a caller without a user (a service principal) names the shared key twice.
 */
export function listReachable(db: Executor, userId: string | undefined): Promise<ConnectionRow[]> {
  return reachable(db, SHARED, userId ?? SHARED);
}

const reachable = prepared((db: Kysely<Database>, shared: string, owner: string) =>
  db
    .selectFrom('mcp_connections')
    .selectAll()
    .where('owner_id', 'in', [shared, owner])
    .orderBy('created_at')
    .orderBy('id'),
);

/** The connections with this slug that the user may come across (theirs, or shared): at most one of each. */
export function listReachableBySlug(db: Executor, userId: string | undefined, slug: string) {
  return db
    .selectFrom('mcp_connections')
    .selectAll()
    .where('owner_id', 'in', userId === undefined ? [SHARED] : [SHARED, userId])
    .where('slug', '=', slug)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** One connection the user may come across (theirs, or shared); undefined for anyone else's. */
export function findReachable(db: Executor, userId: string | undefined, id: string) {
  return db
    .selectFrom('mcp_connections')
    .selectAll()
    .where('id', '=', id)
    .where('owner_id', 'in', userId === undefined ? [SHARED] : [SHARED, userId])
    .executeTakeFirst();
}

/** Whether a slug is taken where it would clash: among shared connections and the owner's (all, for a shared one). */
export async function slugTaken(db: Executor, ownerKey: string, slug: string, exceptId?: string): Promise<boolean> {
  let query = db.selectFrom('mcp_connections').select('id').where('slug', '=', slug);
  if (ownerKey !== SHARED) query = query.where('owner_id', 'in', [SHARED, ownerKey]);
  if (exceptId !== undefined) query = query.where('id', '!=', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

export async function insertConnection(db: Executor, row: Insertable<McpConnectionsTable>): Promise<void> {
  await db.insertInto('mcp_connections').values(row).execute();
}

/** Changes the connection of `ownerKey`; false when there is none of theirs. */
export async function updateConnection(
  db: Executor,
  ownerKey: string,
  id: string,
  patch: Updateable<McpConnectionsTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('mcp_connections')
    .set(patch)
    .where('id', '=', id)
    .where('owner_id', '=', ownerKey)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deletes the connection of `ownerKey` with what hangs off it; false when there is none of theirs. */
export async function deleteConnection(db: Executor, ownerKey: string, id: string): Promise<boolean> {
  await forgetAccountsAt(db, ownerKey, id);
  await db
    .deleteFrom('mcp_connection_tools')
    .where('connection_id', 'in', ownedConnection(db, ownerKey, id))
    .execute();
  const deleted = await db
    .deleteFrom('mcp_connections')
    .where('id', '=', id)
    .where('owner_id', '=', ownerKey)
    .executeTakeFirst();
  return Number(deleted.numDeletedRows) > 0;
}

/** The pinned tools of a connection the caller was admitted to. */
const pinsOf = prepared((db: Kysely<Database>, connectionId: string) =>
  db.selectFrom('mcp_connection_tools').selectAll().where('connection_id', '=', connectionId),
);

/** A connection's pinned tools (read on every call of one of them). */
export function listPins(db: Executor, connectionId: string) {
  return pinsOf(db, connectionId);
}

export async function upsertPin(db: Executor, row: Insertable<McpConnectionToolsTable>): Promise<void> {
  const { connection_id: _connection, name: _name, ...rest } = row;
  await db
    .insertInto('mcp_connection_tools')
    .values(row)
    .onConflict((oc) => oc.columns(['connection_id', 'name']).doUpdateSet(rest))
    .execute();
}

/** Records the OAuth client registered for a connection, unless one was recorded first. */
export async function recordOAuthClient(db: Executor, ownerKey: string, id: string, sealed: string): Promise<void> {
  await db
    .updateTable('mcp_connections')
    .set({ oauth_client: sealed })
    .where('id', '=', id)
    .where('owner_id', '=', ownerKey)
    .where('oauth_client', 'is', null)
    .execute();
}

/** Marks the connection's first listing as pinned, if no one did it first; true for whoever did. */
export async function markPinned(db: Executor, ownerKey: string, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('mcp_connections')
    .set({ pinned_at: at })
    .where('id', '=', id)
    .where('owner_id', '=', ownerKey)
    .where('pinned_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export function findAccount(db: Executor, userId: string, connectionId: string) {
  return db
    .selectFrom('mcp_connection_accounts')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export async function saveAccount(db: Executor, row: Insertable<McpConnectionAccountsTable>): Promise<void> {
  const { connection_id: _connection, user_id: _user, connected_at: _connected, ...rest } = row;
  await db
    .insertInto('mcp_connection_accounts')
    .values(row)
    .onConflict((oc) => oc.columns(['connection_id', 'user_id']).doUpdateSet(rest))
    .execute();
}

export async function deleteAccount(db: Executor, userId: string, connectionId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('mcp_connection_accounts')
    .where('connection_id', '=', connectionId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The user's accounts, at every connection (export, erasure). */
export function accountsOf(db: Executor, userId: string) {
  return db.selectFrom('mcp_connection_accounts').selectAll().where('user_id', '=', userId).execute();
}

export async function insertSignIn(db: Executor, row: Insertable<McpConnectionSignInsTable>): Promise<void> {
  await db.insertInto('mcp_connection_sign_ins').values(row).execute();
}

/** Takes a sign-in by its state, once: a second return with the same state finds nothing. */
export async function takeSignIn(db: Executor, state: string, now: string) {
  const row = await db.selectFrom('mcp_connection_sign_ins').selectAll().where('state', '=', state).executeTakeFirst();
  if (!row) return undefined;
  const taken = await db.deleteFrom('mcp_connection_sign_ins').where('state', '=', state).executeTakeFirst();
  if (Number(taken.numDeletedRows) === 0 || row.expires_at <= now) return undefined;
  return row;
}

/** The connection `id` if it is `ownerKey`'s: what a statement on what hangs off a connection names itself. */
function ownedConnection(db: Executor, ownerKey: string, id: string) {
  return db.selectFrom('mcp_connections').select('id').where('id', '=', id).where('owner_id', '=', ownerKey);
}

/**
 * Forgets every account and sign-in at the connection of `ownerKey` (its address changed: the tokens were for the
 * old server). Each statement names the owner through the connection it must belong to.
 */
export async function forgetAccountsAt(db: Executor, ownerKey: string, id: string): Promise<void> {
  await db
    .deleteFrom('mcp_connection_sign_ins')
    .where('connection_id', 'in', ownedConnection(db, ownerKey, id))
    .execute();
  await db
    .deleteFrom('mcp_connection_accounts')
    .where('connection_id', 'in', ownedConnection(db, ownerKey, id))
    .execute();
}

/** Erasure: the user's accounts, sign-ins and personal connections (with their pinned tools). Returns how many. */
export async function eraseConnectionsOf(db: Executor, userId: string): Promise<number> {
  await db.deleteFrom('mcp_connection_sign_ins').where('user_id', '=', userId).execute();
  const accounts = await db.deleteFrom('mcp_connection_accounts').where('user_id', '=', userId).executeTakeFirst();
  let count = Number(accounts.numDeletedRows);
  const own = await db.selectFrom('mcp_connections').select('id').where('owner_id', '=', userId).execute();
  for (const { id } of own) if (await deleteConnection(db, userId, id)) count += 1;
  return count;
}
