import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { Broadcast } from '../../adapters/broadcast/port.js';
import type { StdioCommand } from '../../config.js';
import type { Database } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '../../errors.js';
import type { AuditRecorder } from '../../ports/audit.js';
import { actorOf } from '../../ports/audit.js';
import { type Caller, CallerErrorCode, userIdOf } from '../../ports/caller.js';
import { RecentReads, SharedForgetting } from '../../ports/recent-reads.js';
import { SYSTEM, subjectOf } from '../../ports/subjects.js';
import {
  type ConnectionRow,
  SHARED,
  deleteConnection,
  findAccount,
  forgetAccountsAt,
  findReachable,
  insertConnection,
  listReachable,
  listReachableBySlug,
  slugTaken,
  updateConnection,
} from './connections.store.js';
import type { ConnectionApproval, ConnectionAuthKind, ConnectionTransport } from './connections.tables.js';
import type { Sealer } from './oauth-client.js';
import { type OutboundPolicy, checkOutboundUrl } from './outbound.js';

export const connectionObject = (id: string): string => `mcp_connection:${id}`;

/** What a request asks a connection to be (a change names only what changes). */
export interface ConnectionInput {
  name: string;
  slug?: string;
  scope: 'personal' | 'shared';
  transport: ConnectionTransport;
  url?: string;
  command?: string;
  auth: { kind: ConnectionAuthKind; header_name?: string; secret?: string; scopes?: string };
  gateway?: boolean;
  approval?: ConnectionApproval;
}
export type ConnectionChange = Partial<Omit<ConnectionInput, 'scope' | 'transport' | 'auth'>> & {
  auth?: Partial<ConnectionInput['auth']>;
};

/** A connection as the API shows it: never its secret. */
export interface ConnectionView {
  id: string;
  name: string;
  slug: string;
  scope: 'personal' | 'shared';
  owner_id: string | null;
  transport: ConnectionTransport;
  url: string | null;
  command: string | null;
  auth: { kind: ConnectionAuthKind; header_name: string | null; secret_set: boolean; scopes: string | null };
  gateway: boolean;
  approval: ConnectionApproval;
  account: { status: 'not_needed' | 'connected' | 'not_connected'; connected_at: string | null };
  can_edit: boolean;
  created_at: string;
  updated_at: string;
}

export interface ConnectionsServiceDeps {
  db: Kysely<Database>;
  authz: AuthzService;
  sealer: Sealer;
  audit: AuditRecorder;
  now: () => Date;
  outbound: OutboundPolicy;
  stdioCommands: Record<string, StdioCommand>;
  /** Told when a connection changed or went, so that its clients and caches are dropped. */
  onChanged: (id: string) => Promise<void>;
  /** Told of a change that could not be told to the other instances. */
  unsent?: (err: unknown) => void;
  /**
   * How long the connections a user can reach, once read, answer `usable` on this instance (the tools offered on
   * every agent turn and MCP listing); 0 or absent: every call reads them. Every change of a connection is told to
   * every instance through the broadcast, so lists may be held only where it reaches every instance.
   */
  heldMs?: number;
}

const HELD_CONNECTION_LISTS = 10_000;
/** Where instances tell each other that connections changed (`all`: every list is read again). */
const CONNECTIONS_CHANGED_CHANNEL = 'connections-changed';

export const ConnectionErrorCode = {
  NotFound: 'CONNECTION_NOT_FOUND',
  SlugTaken: 'CONNECTION_SLUG_TAKEN',
  Invalid: 'CONNECTION_INVALID',
  Limit: 'CONNECTION_LIMIT',
} as const;

const MAX_PERSONAL_CONNECTIONS = 50;
/** Headers a static credential may not set: they belong to the transport. */
const RESERVED_HEADERS =
  /^(host|content-length|content-type|transfer-encoding|connection|accept|mcp-session-id|mcp-protocol-version|cookie)$/i;

/** A slug from a name: lower case letters, digits and dashes, starting with a letter. */
export function slugOf(name: string): string {
  const slug = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^[^a-z]+|-+$/g, '')
    .slice(0, 24)
    .replace(/-+$/, '');
  return slug || 'server';
}

const invalid = (message: string, field: string) =>
  new BadRequestError(message, {
    code: ConnectionErrorCode.Invalid,
    issues: [{ loc: ['body', field], msg: message, type: 'value_error' }],
  });

/** Opened connection secrets kept at most; beyond, the memo starts again. */
const MAX_OPENED_SECRETS = 1_000;

/**
 * Connected MCP servers: who may register, see, change and use which. A user registers personal connections; an
 * administrator registers shared ones (and is the only one who may run a stdio command, from the configured
 * allow-list, or offer a server's tools to MCP clients). Secrets are sealed and never shown.
 */
export class ConnectionsService {
  /** Opened secrets by connection and sealed value. */
  readonly #opened = new Map<string, string>();
  /** The connections each user can reach (theirs and the shared ones), by owner key, as last read here. */
  readonly #held: RecentReads<ConnectionRow[]>;
  readonly #changes: SharedForgetting<'all'>;

  constructor(private readonly deps: ConnectionsServiceDeps) {
    this.#held = new RecentReads(deps.heldMs ?? 0, HELD_CONNECTION_LISTS);
    this.#changes = new SharedForgetting(
      CONNECTIONS_CHANGED_CHANNEL,
      () => this.#held.forget(() => true),
      deps.unsent ?? (() => undefined),
    );
  }

  /**
   * Tells the other instances of connections changed here, and reads afresh after a change on another, through
   * `broadcast`. Returns the stop.
   */
  shareForgetting(broadcast: Broadcast): () => void {
    return this.#changes.share(broadcast);
  }

  /** Connections were added, changed or removed: every instance reads them again. */
  async changed(): Promise<void> {
    await this.#changes.tell('all');
  }

  async isAdmin(caller: Caller): Promise<boolean> {
    return this.deps.authz.check(subjectOf(caller), 'admin', SYSTEM);
  }

  /** The connections the caller may use: their own, and the shared ones they were given. */
  async usable(caller: Caller): Promise<ConnectionRow[]> {
    const userId = userIdOf(caller);
    const key = userId ?? SHARED;
    const now = this.deps.now().getTime();
    const rows = await this.#held.through(key, now, () => listReachable(this.deps.db, userId));
    const allowed = await Promise.all(rows.map((row) => this.#mayUse(caller, row)));
    return rows.filter((_, i) => allowed[i]);
  }

  /** The connections with this slug the caller may use (a tool name names its connection by slug). */
  async usableBySlug(caller: Caller, slug: string): Promise<ConnectionRow[]> {
    const rows = await listReachableBySlug(this.deps.db, userIdOf(caller), slug);
    const allowed = await Promise.all(rows.map((row) => this.#mayUse(caller, row)));
    return rows.filter((_, i) => allowed[i]);
  }

  /** One connection the caller may use, or 404. */
  async usableOne(caller: Caller, id: string): Promise<ConnectionRow> {
    const row = await findReachable(this.deps.db, userIdOf(caller), id);
    if (!row || !(await this.#mayUse(caller, row))) throw notFound();
    return row;
  }

  async list(caller: Caller): Promise<ConnectionView[]> {
    const admin = await this.isAdmin(caller);
    const rows = await listReachable(this.deps.db, userIdOf(caller));
    const visible = admin ? rows : await this.usable(caller);
    return Promise.all(visible.map((row) => this.view(caller, row, admin)));
  }

  async get(caller: Caller, id: string): Promise<ConnectionView> {
    const admin = await this.isAdmin(caller);
    const row = await findReachable(this.deps.db, userIdOf(caller), id);
    if (!row || (!admin && !(await this.#mayUse(caller, row)))) throw notFound();
    return this.view(caller, row, admin);
  }

  /** The allow-listed stdio commands, for administrators. */
  async commands(caller: Caller): Promise<{ name: string; description: string }[]> {
    if (!(await this.isAdmin(caller))) return [];
    return Object.entries(this.deps.stdioCommands).map(([name, c]) => ({ name, description: c.description }));
  }

  async create(caller: Caller, input: ConnectionInput): Promise<ConnectionView> {
    const admin = await this.isAdmin(caller);
    const userId = userIdOf(caller);
    if (input.scope === 'shared' && !admin) throw forbidden('Only administrators register shared connections');
    if (input.scope === 'personal' && userId === undefined)
      throw forbidden('Personal connections belong to users; a service principal uses shared ones');
    const ownerKey = input.scope === 'shared' ? SHARED : userId!;
    this.#validate(input, admin);
    if (ownerKey !== SHARED) {
      const own = (await listReachable(this.deps.db, userId)).filter((r) => r.owner_id === ownerKey);
      if (own.length >= MAX_PERSONAL_CONNECTIONS)
        throw new BadRequestError(`At most ${MAX_PERSONAL_CONNECTIONS} personal connections`, {
          code: ConnectionErrorCode.Limit,
        });
    }
    const slug = input.slug ?? slugOf(input.name);
    if (await slugTaken(this.deps.db, ownerKey, slug)) throw slugConflict(slug);
    const id = randomUUID();
    const now = this.deps.now().toISOString();
    const secret = input.auth.secret;
    const row = {
      id,
      owner_id: ownerKey,
      name: input.name,
      slug,
      transport: input.transport,
      url: input.transport === 'stdio' ? null : (input.url ?? null),
      command: input.transport === 'stdio' ? (input.command ?? null) : null,
      auth_kind: input.auth.kind,
      header_name: input.auth.kind === 'header' ? (input.auth.header_name ?? null) : null,
      secret: secret && (input.auth.kind === 'bearer' || input.auth.kind === 'header') ? this.#seal(id, secret) : null,
      scopes: input.auth.kind === 'oauth' ? (input.auth.scopes ?? null) : null,
      oauth_client: null,
      gateway: input.scope === 'shared' && input.gateway ? 1 : 0,
      approval: input.approval ?? 'destructive',
      pinned_at: null,
      created_at: now,
      updated_at: now,
    };
    // Two registrations of one slug at once: the index refuses the second, which is told as the check would have.
    await insertConnection(this.deps.db, row).catch((error: unknown) => {
      throw isUniqueViolation(error) ? slugConflict(slug) : error;
    });
    await this.changed();
    await this.deps.authz.write([
      ownerKey === SHARED
        ? { user: 'user:*', relation: 'user', object: connectionObject(id) }
        : { user: `user:${ownerKey}`, relation: 'owner', object: connectionObject(id) },
    ]);
    await this.#audit(caller, 'connection.created', id, { scope: input.scope, transport: input.transport });
    const stored = await findReachable(this.deps.db, userId, id);
    return this.view(caller, stored!, admin);
  }

  async update(caller: Caller, id: string, change: ConnectionChange): Promise<ConnectionView> {
    const { row, admin, ownerKey } = await this.#editable(caller, id);
    const auth = { ...currentAuth(row), ...change.auth };
    const merged: ConnectionInput = {
      name: change.name ?? row.name,
      slug: change.slug ?? row.slug,
      scope: ownerKey === SHARED ? 'shared' : 'personal',
      transport: row.transport,
      ...((change.url ?? row.url) !== null && { url: change.url ?? row.url! }),
      ...((change.command ?? row.command) !== null && { command: change.command ?? row.command! }),
      auth,
      gateway: change.gateway ?? row.gateway === 1,
      approval: change.approval ?? row.approval,
    };
    const reaches = (merged.url ?? null) !== row.url || (merged.command ?? null) !== row.command;
    // Another address is another server: a secret entered for the old one is not sent there.
    this.#validate(merged, admin, { secretKept: row.secret !== null && !reaches });
    if (merged.slug !== row.slug && (await slugTaken(this.deps.db, ownerKey, merged.slug!, id)))
      throw slugConflict(merged.slug!);
    const secret =
      auth.kind === 'bearer' || auth.kind === 'header'
        ? change.auth?.secret !== undefined
          ? this.#seal(id, change.auth.secret)
          : row.secret
        : null;
    await updateConnection(this.deps.db, ownerKey, id, {
      name: merged.name,
      slug: merged.slug!,
      url: row.transport === 'stdio' ? null : (merged.url ?? null),
      command: row.transport === 'stdio' ? (merged.command ?? null) : null,
      auth_kind: auth.kind,
      header_name: auth.kind === 'header' ? (auth.header_name ?? null) : null,
      secret,
      scopes: auth.kind === 'oauth' ? (auth.scopes ?? null) : null,
      // Another server (or another sign-in service) is another client registration.
      ...(reaches && { oauth_client: null }),
      gateway: ownerKey === SHARED && merged.gateway ? 1 : 0,
      approval: merged.approval!,
      updated_at: this.deps.now().toISOString(),
    });
    // Nor are the accounts people connected at the old one: they connect again at the new address.
    if (reaches) await forgetAccountsAt(this.deps.db, ownerKey, id);
    await this.changed();
    await this.deps.onChanged(id);
    await this.#audit(caller, 'connection.updated', id, { fields: Object.keys(change).join(',') });
    const updated = await findReachable(this.deps.db, userIdOf(caller), id);
    return this.view(caller, updated!, admin);
  }

  async delete(caller: Caller, id: string): Promise<void> {
    const { ownerKey } = await this.#editable(caller, id);
    if (!(await deleteConnection(this.deps.db, ownerKey, id))) throw notFound();
    await this.changed();
    await this.removeTuples(id);
    await this.deps.onChanged(id);
    await this.#audit(caller, 'connection.deleted', id, {});
  }

  /** Removes the tuples of a connection and of its tools; returns how many went. */
  async removeTuples(id: string): Promise<number> {
    let removed = 0;
    for (const tuple of await this.deps.authz.read({ relation: 'connection', user: connectionObject(id) }))
      removed += await this.deps.authz.removeAllFor(tuple.object);
    return removed + (await this.deps.authz.removeAllFor(connectionObject(id)));
  }

  /** The connection the caller may change: 404 when they may not even see it, 403 when they may only use it. */
  async editable(caller: Caller, id: string): Promise<ConnectionRow> {
    return (await this.#editable(caller, id)).row;
  }

  async view(caller: Caller, row: ConnectionRow, admin: boolean): Promise<ConnectionView> {
    const userId = userIdOf(caller);
    const account =
      row.auth_kind !== 'oauth'
        ? undefined
        : userId === undefined
          ? undefined
          : await findAccount(this.deps.db, userId, row.id);
    return {
      id: row.id,
      name: row.name,
      slug: row.slug,
      scope: row.owner_id === SHARED ? 'shared' : 'personal',
      owner_id: row.owner_id === SHARED ? null : row.owner_id,
      transport: row.transport,
      url: row.url,
      command: row.command,
      auth: {
        kind: row.auth_kind,
        header_name: row.header_name,
        secret_set: row.secret !== null,
        scopes: row.scopes,
      },
      gateway: row.gateway === 1,
      approval: row.approval,
      account: {
        status: row.auth_kind !== 'oauth' ? 'not_needed' : account ? 'connected' : 'not_connected',
        connected_at: account?.connected_at ?? null,
      },
      can_edit: row.owner_id === SHARED ? admin : row.owner_id === userId,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  /** The static secret of a connection, opened. */
  secretOf(row: ConnectionRow): string | undefined {
    if (row.secret === null) return undefined;
    // Each call of a connection needs its credential: opened once per sealed value (a new secret is sealed anew).
    const key = `${row.id}\u0000${row.secret}`;
    let secret = this.#opened.get(key);
    if (secret === undefined) {
      if (this.#opened.size >= MAX_OPENED_SECRETS) this.#opened.clear();
      secret = this.deps.sealer.open(`connection:${row.id}`, row.secret);
      this.#opened.set(key, secret);
    }
    return secret;
  }

  async #mayUse(caller: Caller, row: ConnectionRow): Promise<boolean> {
    if (row.owner_id !== SHARED) return row.owner_id === userIdOf(caller);
    return this.deps.authz.check(subjectOf(caller), 'user', connectionObject(row.id));
  }

  async #editable(caller: Caller, id: string) {
    const admin = await this.isAdmin(caller);
    const row = await findReachable(this.deps.db, userIdOf(caller), id);
    if (!row || (!admin && !(await this.#mayUse(caller, row)))) throw notFound();
    if (row.owner_id === SHARED ? !admin : row.owner_id !== userIdOf(caller))
      throw forbidden('Only administrators change shared connections');
    return { row, admin, ownerKey: row.owner_id };
  }

  #validate(input: ConnectionInput, admin: boolean, options: { secretKept?: boolean } = {}): void {
    const { auth } = input;
    if (input.slug !== undefined && !/^[a-z][a-z0-9-]{0,23}$/.test(input.slug))
      throw invalid('slug: lower case letters, digits and dashes, starting with a letter, at most 24', 'slug');
    if (input.transport === 'stdio') {
      if (!admin || input.scope !== 'shared')
        throw forbidden('Only administrators register stdio servers, as shared connections');
      if (!input.command || !Object.hasOwn(this.deps.stdioCommands, input.command))
        throw invalid('command: not one of the allowed stdio commands (CONNECTIONS_STDIO_COMMANDS)', 'command');
      if (auth.kind !== 'none') throw invalid('auth: a stdio server takes no credential', 'auth');
    } else {
      if (!input.url) throw invalid('url: required for an HTTP transport', 'url');
      try {
        checkOutboundUrl(input.url, this.deps.outbound);
      } catch (error) {
        throw invalid(`url: ${(error as Error).message}`, 'url');
      }
    }
    if (auth.kind === 'header') {
      if (!auth.header_name || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(auth.header_name))
        throw invalid('auth.header_name: an HTTP header name is required', 'auth');
      if (RESERVED_HEADERS.test(auth.header_name))
        throw invalid(`auth.header_name: ${auth.header_name} is reserved`, 'auth');
    }
    if ((auth.kind === 'bearer' || auth.kind === 'header') && auth.secret === undefined && !options.secretKept)
      throw invalid('auth.secret: required for a bearer or header credential', 'auth');
    if (auth.secret !== undefined && /[\r\n\0]/.test(auth.secret))
      throw invalid('auth.secret: one line of text', 'auth');
    if (auth.kind === 'oauth' && input.scope === 'shared' && input.transport === 'stdio')
      throw invalid('auth: OAuth needs an HTTP transport', 'auth');
    if (input.gateway && (input.scope !== 'shared' || !admin))
      throw forbidden('Only administrators offer a shared connection to MCP clients');
  }

  #seal(id: string, secret: string): string {
    return this.deps.sealer.seal(`connection:${id}`, secret);
  }

  async #audit(
    caller: Caller,
    type: 'connection.created' | 'connection.updated' | 'connection.deleted',
    id: string,
    details: Record<string, string>,
  ) {
    await this.deps.audit.record({ type, actorId: actorOf(caller), details: { connection_id: id, ...details } });
  }
}

function currentAuth(row: ConnectionRow): ConnectionInput['auth'] {
  return {
    kind: row.auth_kind,
    ...(row.header_name !== null && { header_name: row.header_name }),
    ...(row.scopes !== null && { scopes: row.scopes }),
  };
}

const notFound = () => new NotFoundError('Connection not found', { code: ConnectionErrorCode.NotFound });
const forbidden = (message: string) => new ForbiddenError(message, { code: CallerErrorCode.AccessDenied });
const slugConflict = (slug: string) =>
  new ConflictError(`The slug ${slug} is taken; choose another`, { code: ConnectionErrorCode.SlugTaken });
