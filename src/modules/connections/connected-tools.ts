import { createHash, randomUUID } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { AuthzService } from '../../adapters/authz/port.js';
import type { EphemeralStore } from '../../adapters/ephemeral/port.js';
import type { StdioCommand } from '../../config.js';
import type { Database } from '../../db/database.js';
import { CommonErrorCode, NotFoundError, ServiceUnavailableError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AuditRecorder } from '../../ports/audit.js';
import { actorOf } from '../../ports/audit.js';
import { type Caller, userIdOf } from '../../ports/caller.js';
import {
  AccountRequiredError,
  CONNECTED_SEPARATOR,
  type ConnectedServer,
  type ConnectedTool,
  type ConnectedTools,
} from '../../ports/connected-tools.js';
import {
  type ConnectionRow,
  type ToolPinRow,
  findReachable,
  listPins,
  markPinned,
  upsertPin,
} from './connections.store.js';
import type { ConnectionsService } from './connections.service.js';
import { AccountMissing, type UpstreamOAuth } from './oauth-client.js';
import { OutboundLimitError, OutboundRefusedError } from './outbound.js';
import { type UpstreamPool, type UpstreamTarget, isTransportFailure } from './upstream.js';

/** What a pinned definition holds: everything a model or a person reads to decide to call the tool. */
type Definition = Pick<Tool, 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations'>;

export interface ConnectedToolsDeps {
  db: Kysely<Database>;
  authz: AuthzService;
  connections: ConnectionsService;
  pool: UpstreamPool;
  oauth: UpstreamOAuth;
  stdioCommands: Record<string, StdioCommand>;
  audit: AuditRecorder;
  logger: Logger;
  now: () => Date;
  registry: Registry;
  /** The largest result passed on from an upstream (its JSON), in bytes. */
  maxResultBytes: number;
  /** Requests for approval and approvals, shared by every instance. */
  approvals: EphemeralStore;
  /** Where a user connects their account at a connection (the page, with the connection named). */
  connectUrl: (connectionId: string) => string;
}

const MAX_NAME = 64;

/** The definition a listing shows, in the fields that are pinned. */
function definitionOf(tool: Tool): Definition {
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    description: tool.description ?? '',
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
    annotations: tool.annotations ?? {},
  };
}

/** A value with the keys of its objects sorted at every depth, so that equal values print the same. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  );
}

/** A stable digest of a definition. */
export function digestOf(definition: Definition): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(definition)))
    .digest('base64url');
}

/** The part of a tool's offered name after its server's: the upstream's name where it is safe, else with a hash. */
function namePart(slug: string, upstream: string): string {
  const room = MAX_NAME - slug.length - CONNECTED_SEPARATOR.length;
  const safe = upstream.replace(/[^A-Za-z0-9_-]/g, '_');
  if (safe === upstream && safe.length <= room) return safe;
  const hash = createHash('sha256').update(upstream).digest('hex').slice(0, 8);
  return `${safe.slice(0, room - 9)}_${hash}`;
}

/** Which calls ask a human first, by the connection's setting and the tool's annotations. */
function asksFirst(approval: ConnectionRow['approval'], annotations: Tool['annotations']): boolean {
  if (approval === 'never') return false;
  const readOnly = annotations?.readOnlyHint === true;
  // The spec's defaults: a tool that says nothing is taken to be destructive.
  const destructive = !readOnly && annotations?.destructiveHint !== false;
  return approval === 'writes' ? !readOnly : destructive;
}

export interface ToolState {
  name: string;
  upstream_name: string;
  title: string | null;
  description: string;
  input_schema: Record<string, unknown>;
  annotations: Record<string, unknown>;
  status: 'approved' | 'held';
  asks_first: boolean;
  changed?: { description: string; input_schema: Record<string, unknown> } | null;
}

/**
 * The tools of connected servers, offered beside the service's own. A connection's tools are pinned the first
 * time they are listed after it was registered (registering is approving); from then on a definition the upstream
 * changes, and a tool it adds, is held (not offered, not callable) until the connection's owner or an
 * administrator approves it. Lists follow the upstream's `list_changed`, through the pool's cache. Calls run as
 * the caller (their own account where the server needs one), behind the connection's breaker and timeouts; their
 * results are size-capped and checked against the tool's output schema.
 */
export class ConnectedToolCatalog implements ConnectedTools {
  readonly #calls: Counter<'connection' | 'tool' | 'status'>;
  readonly #latency: Histogram<'connection'>;

  /**
   * Approved definitions, parsed once per connection, tool and digest: the same object every call, so that the MCP
   * client compiles a tool's output schema once (its validator cache is keyed by the schema object).
   */
  readonly #definitions = new Map<string, Definition>();
  /** Upstream listings already compared with the pins (the pool hands back the same list while it is cached). */
  readonly #compared = new WeakSet<Tool[]>();

  constructor(private readonly deps: ConnectedToolsDeps) {
    this.#calls = new Counter({
      name: 'connected_tool_calls_total',
      help: 'Calls of connected MCP servers tools, by connection, tool and outcome',
      labelNames: ['connection', 'tool', 'status'],
      registers: [deps.registry],
    });
    this.#latency = new Histogram({
      name: 'connected_tool_call_duration_seconds',
      help: 'How long connected MCP servers took to answer a tool call',
      labelNames: ['connection'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [deps.registry],
    });
  }

  async list(caller: Caller, options: { gateway?: boolean } = {}): Promise<ConnectedTool[]> {
    const rows = (await this.deps.connections.usable(caller)).filter((r) => !options.gateway || r.gateway === 1);
    const lists = await Promise.all(rows.map((row) => this.#offered(caller, row)));
    return lists.flat();
  }

  async find(caller: Caller, name: string, options: { gateway?: boolean } = {}): Promise<ConnectedTool | undefined> {
    const at = name.indexOf(CONNECTED_SEPARATOR);
    if (at <= 0) return undefined;
    const slug = name.slice(0, at);
    const rows = (await this.deps.connections.usableBySlug(caller, slug)).filter(
      (r) => !options.gateway || r.gateway === 1,
    );
    for (const row of rows) {
      const tool = (await this.#offered(caller, row)).find((t) => t.name === name);
      if (tool) return tool;
    }
    return undefined;
  }

  async call(
    caller: Caller,
    tool: ConnectedTool,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const row = await this.deps.connections.usableOne(caller, tool.server.id);
    const pin = (await listPins(this.deps.db, row.id)).find((p) => p.name === tool.upstreamName);
    if (!pin?.definition || pin.pending !== null) return heldResult(tool.name);
    const definition = this.#definitionOf(row.id, pin) as Tool;
    const started = process.hrtime.bigint();
    const labels = { connection: row.slug, tool: tool.upstreamName };
    let status = 'error';
    try {
      const target = await this.#target(caller, row);
      let result: CallToolResult;
      try {
        result = (await this.deps.pool.callTool(target, definition, args, signal)) as CallToolResult;
      } catch (error) {
        if (!isUnauthorized(error) || row.auth_kind !== 'oauth') throw error;
        // The upstream refused the token (revoked, say): refresh once, else ask the user to connect again.
        const retry = await this.#target(caller, row, { forceRefresh: true });
        result = (await this.deps.pool.callTool(retry, definition, args, signal)) as CallToolResult;
      }
      const capped = this.#capped(tool, result);
      status = capped.isError ? 'error' : 'success';
      return capped;
    } catch (error) {
      if (error instanceof AccountRequiredError) {
        status = 'account_required';
        throw error;
      }
      if (signal.aborted) {
        status = 'cancelled';
        throw error;
      }
      return this.#failure(row, tool, error);
    } finally {
      this.#calls.inc({ ...labels, status });
      this.#latency.observe({ connection: row.slug }, Number(process.hrtime.bigint() - started) / 1e9);
      void this.deps.audit
        .record({
          type: 'connection.tool_called',
          actorId: actorOf(caller),
          details: { connection_id: row.id, tool: tool.upstreamName, outcome: status },
        })
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'audit of a connected tool call failed'));
    }
  }

  async approval(
    caller: Caller,
    tool: ConnectedTool,
    args: Record<string, unknown>,
  ): Promise<{ approved: true } | { approvalId: string }> {
    const digest = callDigest(caller, tool.name, args);
    if ((await this.deps.approvals.take(`connection-approval:granted:${digest}`)) !== undefined)
      return { approved: true };
    const approvalId = randomUUID();
    const request: ApprovalRequest = {
      subject: caller.subject,
      tool: tool.name,
      server: tool.server.name,
      args,
      digest,
    };
    await this.deps.approvals.put(`connection-approval:asked:${approvalId}`, JSON.stringify(request), APPROVAL_TTL_MS);
    return { approvalId };
  }

  /** The call an approval asks about, for the person who asked (undefined for anyone else, or once it expired). */
  async approvalRequest(caller: Caller, approvalId: string): Promise<ApprovalRequest | undefined> {
    const stored = await this.deps.approvals.peek(`connection-approval:asked:${approvalId}`);
    const request = stored === undefined ? undefined : (JSON.parse(stored) as ApprovalRequest);
    return request?.subject === caller.subject ? request : undefined;
  }

  /** Approves (or declines) a requested call: approved, the same call by the same caller runs once. */
  async decide(caller: Caller, approvalId: string, approve: boolean): Promise<ApprovalRequest | undefined> {
    const request = await this.approvalRequest(caller, approvalId);
    if (!request) return undefined;
    await this.deps.approvals.delete(`connection-approval:asked:${approvalId}`);
    if (approve) await this.deps.approvals.put(`connection-approval:granted:${request.digest}`, '1', APPROVAL_TTL_MS);
    await this.deps.audit.record({
      type: 'connection.tool_approved',
      actorId: actorOf(caller),
      details: { tool: request.tool, approval_id: approvalId, approved: approve },
    });
    return request;
  }

  /** Every tool of a connection with its pin state (the connections page), listing the upstream afresh. */
  async states(caller: Caller, row: ConnectionRow): Promise<ToolState[]> {
    await this.#refresh(caller, row, { fresh: true }).catch(() => undefined);
    const pins = await listPins(this.deps.db, row.id);
    return pins
      .map((pin) => {
        const approved = pin.definition ? (JSON.parse(pin.definition) as Definition) : undefined;
        const pending = pin.pending ? (JSON.parse(pin.pending) as Definition) : undefined;
        const shown = approved ?? pending!;
        return {
          name: `${row.slug}${CONNECTED_SEPARATOR}${namePart(row.slug, pin.name)}`,
          upstream_name: pin.name,
          title: shown.title ?? null,
          description: shown.description ?? '',
          input_schema: shown.inputSchema,
          annotations: shown.annotations ?? {},
          status: pending ? ('held' as const) : ('approved' as const),
          asks_first: asksFirst(row.approval, shown.annotations),
          changed: pending ? { description: pending.description ?? '', input_schema: pending.inputSchema } : null,
        };
      })
      .sort((a, b) => a.upstream_name.localeCompare(b.upstream_name));
  }

  /** Approves what the upstream now shows for one tool: it is offered again, as it is now. */
  async approve(caller: Caller, row: ConnectionRow, upstreamName: string): Promise<void> {
    const pin = (await listPins(this.deps.db, row.id)).find((p) => p.name === upstreamName);
    if (!pin) throw new NotFoundError(`No tool ${upstreamName} at this connection`, { code: CommonErrorCode.NotFound });
    if (pin.pending === null) return;
    await upsertPin(this.deps.db, {
      connection_id: row.id,
      name: pin.name,
      definition: pin.pending,
      digest: pin.pending_digest,
      pending: null,
      pending_digest: null,
      updated_at: this.deps.now().toISOString(),
    });
    await this.#grant(row, [pin.name]);
    await this.deps.audit.record({
      type: 'connection.tool_approved',
      actorId: actorOf(caller),
      details: { connection_id: row.id, tool: pin.name },
    });
  }

  /** Connects as the caller and lists the upstream: what a test of the connection shows. */
  async probe(caller: Caller, row: ConnectionRow) {
    const started = Date.now();
    const target = await this.#target(caller, row);
    const info = await this.deps.pool.info(target);
    const tools = await this.#refresh(caller, row, { fresh: true });
    return { info, tools: tools?.length ?? 0, latencyMs: Date.now() - started };
  }

  /** The upstream's list changed (its `list_changed`): held definitions are recorded at once. */
  toolsChanged(target: UpstreamTarget, tools: Tool[]): void {
    void this.#pinAgainst(target, tools).catch((error: unknown) =>
      this.deps.logger.warn({ err: error, connection: target.connectionId }, 'recording changed upstream tools failed'),
    );
  }

  async #offered(caller: Caller, row: ConnectionRow): Promise<ConnectedTool[]> {
    await this.#refresh(caller, row).catch((error: unknown) =>
      this.deps.logger.debug(
        { err: error, connection: row.id },
        'listing upstream tools failed; offering the pinned ones',
      ),
    );
    const server: ConnectedServer = serverOf(row);
    const pins = await listPins(this.deps.db, row.id);
    return pins.flatMap((pin) => (pin.definition && pin.pending === null ? [this.#toolOf(row, server, pin)] : []));
  }

  #definitionOf(connectionId: string, pin: ToolPinRow): Definition {
    const key = `${connectionId}\u0000${pin.name}\u0000${pin.digest ?? ''}`;
    let definition = this.#definitions.get(key);
    if (!definition) {
      if (this.#definitions.size >= 10_000) this.#definitions.clear();
      definition = JSON.parse(pin.definition!) as Definition;
      this.#definitions.set(key, definition);
    }
    return definition;
  }

  #toolOf(row: ConnectionRow, server: ConnectedServer, pin: ToolPinRow): ConnectedTool {
    const definition = this.#definitionOf(row.id, pin);
    const part = namePart(row.slug, pin.name);
    return {
      name: `${row.slug}${CONNECTED_SEPARATOR}${part}`,
      upstreamName: pin.name,
      ...(definition.title !== undefined && { title: definition.title }),
      description: `${definition.description ?? ''}`.slice(0, 4_000) || `${pin.name} (${row.name})`,
      inputSchema: definition.inputSchema,
      ...(definition.outputSchema !== undefined && {
        outputSchema: definition.outputSchema,
      }),
      annotations: definition.annotations ?? {},
      server,
      object: toolObjectOf(row.id, part),
      asksFirst: asksFirst(row.approval, definition.annotations),
    };
  }

  /** Lists the upstream as the caller (when the caller can reach it) and records what changed against the pins. */
  async #refresh(caller: Caller, row: ConnectionRow, options: { fresh?: boolean } = {}): Promise<Tool[] | undefined> {
    let target: UpstreamTarget;
    try {
      target = await this.#target(caller, row);
    } catch (error) {
      if (error instanceof AccountRequiredError) return undefined;
      throw error;
    }
    const tools = await this.deps.pool.listTools(target, options);
    // A listing from the pool's cache was compared when it was fetched.
    if (this.#compared.has(tools)) return tools;
    await this.#pinAgainst(row, tools);
    this.#compared.add(tools);
    return tools;
  }

  async #pinAgainst(from: ConnectionRow | UpstreamTarget, tools: Tool[]): Promise<void> {
    const row =
      'slug' in from ? from : await findReachable(this.deps.db, from.ownerKey || undefined, from.connectionId);
    if (!row) return;
    const now = this.deps.now().toISOString();
    const first = row.pinned_at === null && (await markPinned(this.deps.db, row.owner_id, row.id, now));
    if (first) row.pinned_at = now;
    const pins = new Map((await listPins(this.deps.db, row.id)).map((p) => [p.name, p]));
    const granted: string[] = [];
    for (const tool of tools.slice(0, 500)) {
      const definition = definitionOf(tool);
      const digest = digestOf(definition);
      const pin = pins.get(tool.name);
      if (first && !pin) {
        await upsertPin(this.deps.db, {
          connection_id: row.id,
          name: tool.name,
          definition: JSON.stringify(definition),
          digest,
          pending: null,
          pending_digest: null,
          updated_at: now,
        });
        granted.push(tool.name);
      } else if (!pin || (pin.digest !== digest && pin.pending_digest !== digest)) {
        // A new tool, or a changed definition (a "rug pull"): held until approved.
        if (pin?.digest === digest) continue;
        await upsertPin(this.deps.db, {
          connection_id: row.id,
          name: tool.name,
          definition: pin?.definition ?? null,
          digest: pin?.digest ?? null,
          pending: JSON.stringify(definition),
          pending_digest: digest,
          updated_at: now,
        });
        this.deps.logger.warn(
          { connection: row.id, tool: tool.name },
          'upstream tool definition changed; held until approved',
        );
      } else if (pin.digest === digest && pin.pending !== null) {
        // Changed back to what was approved: nothing is held any more.
        await upsertPin(this.deps.db, { ...pin, pending: null, pending_digest: null, updated_at: now });
      }
    }
    if (granted.length > 0) await this.#grant(row, granted);
  }

  /** Ties tools to their connection, so that whoever may use the connection may use them (unless blocked). */
  async #grant(row: ConnectionRow, upstreamNames: string[]): Promise<void> {
    await this.deps.authz.write(
      upstreamNames.map((name) => ({
        user: `mcp_connection:${row.id}`,
        relation: 'connection',
        object: toolObjectOf(row.id, namePart(row.slug, name)),
      })),
    );
  }

  /** How to reach the connection as the caller: its shared credential, or the caller's own account. */
  async #target(caller: Caller, row: ConnectionRow, options: { forceRefresh?: boolean } = {}): Promise<UpstreamTarget> {
    const version = row.updated_at;
    if (row.transport === 'stdio') {
      const command = row.command ? this.deps.stdioCommands[row.command] : undefined;
      if (!command)
        throw new ServiceUnavailableError(`The command of ${row.name} is no longer allowed`, {
          code: CommonErrorCode.ServiceUnavailable,
        });
      return {
        key: `${row.id}::${version}`,
        connectionId: row.id,
        ownerKey: row.owner_id,
        transport: { kind: 'stdio', command },
      };
    }
    const headers: Record<string, string> = {};
    let account = '';
    if (row.auth_kind === 'bearer') headers.Authorization = `Bearer ${this.deps.connections.secretOf(row)}`;
    if (row.auth_kind === 'header' && row.header_name)
      headers[row.header_name] = this.deps.connections.secretOf(row) ?? '';
    if (row.auth_kind === 'oauth') {
      const userId = userIdOf(caller);
      const server = serverOf(row);
      if (userId === undefined) throw new AccountRequiredError(server, this.deps.connectUrl(row.id));
      let token: string;
      try {
        token = await this.deps.oauth.accessToken(row, userId, options);
      } catch (error) {
        if (error instanceof AccountMissing) {
          await this.deps.pool.close(row.id, userId);
          throw new AccountRequiredError(server, this.deps.connectUrl(row.id));
        }
        throw error;
      }
      headers.Authorization = `Bearer ${token}`;
      // A client per account and token: a refreshed token is a new client.
      account = `${userId}:${createHash('sha256').update(token).digest('base64url').slice(0, 12)}`;
    }
    return {
      key: `${row.id}:${account}:${version}`,
      connectionId: row.id,
      ownerKey: row.owner_id,
      transport: { kind: row.transport, url: row.url!, headers },
    };
  }

  #capped(tool: ConnectedTool, result: CallToolResult): CallToolResult {
    const size = Buffer.byteLength(JSON.stringify(result));
    if (size > this.deps.maxResultBytes) {
      return errorResult(
        `${tool.server.name} answered ${tool.upstreamName} with ${size} bytes, more than the ${this.deps.maxResultBytes} allowed`,
      );
    }
    // Only what MCP results carry goes on: content, structured content and the error flag.
    return {
      content: result.content ?? [],
      ...(result.structuredContent !== undefined && { structuredContent: result.structuredContent }),
      isError: result.isError === true,
    };
  }

  #failure(row: ConnectionRow, tool: ConnectedTool, error: unknown): CallToolResult {
    const name = row.name;
    let message: string;
    if (error instanceof OutboundLimitError)
      message =
        error.limit === 'size'
          ? `${name} sent more than the allowed response size; the call was cut off`
          : `${name} did not answer in time`;
    else if (error instanceof OutboundRefusedError) message = `${name} cannot be reached: ${error.message}`;
    else if ((error as { status?: unknown }).status === 503 || (error as Error).name === 'CircuitOpenError')
      message = `${name} is unavailable; retry shortly`;
    else if (/timed? ?out|timeout/i.test(String((error as Error).message)))
      message = `${name} did not answer ${tool.upstreamName} in time`;
    else if (/output schema|structured content/i.test(String((error as Error).message)))
      message = `${name} answered ${tool.upstreamName} with output that does not match its schema`;
    else if (isTransportFailure(error)) message = `${name} closed the connection during the call`;
    else if (typeof (error as { code?: unknown }).code === 'number')
      message = `${name} refused the call: ${String((error as Error).message).slice(0, 300)}`;
    else message = `${name} could not be called`;
    this.deps.logger.warn({ err: error, connection: row.id, tool: tool.upstreamName }, 'connected tool call failed');
    return errorResult(message);
  }
}

function serverOf(row: ConnectionRow): ConnectedServer {
  return { id: row.id, slug: row.slug, name: row.name, transport: row.transport, url: row.url };
}

/** A call that waits for a person's approval. */
export interface ApprovalRequest {
  subject: string;
  tool: string;
  server: string;
  args: Record<string, unknown>;
  /** Identifies the very call: caller, tool and arguments. */
  digest: string;
}

/** How long a request for approval, and an approval, last. */
const APPROVAL_TTL_MS = 15 * 60_000;

function callDigest(caller: Caller, tool: string, args: Record<string, unknown>): string {
  return createHash('sha256')
    .update(JSON.stringify([caller.subject, tool, canonical(args)]))
    .digest('base64url');
}

/** The authorization object of a connected tool. */
export const toolObjectOf = (connectionId: string, part: string): string => `tool:${connectionId}.${part}`;

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function heldResult(name: string): CallToolResult {
  return errorResult(`${name} changed upstream and is held until its new definition is approved`);
}

/** An HTTP 401 from the upstream (its transport's error), never a tool's own JSON-RPC error that says so. */
function isUnauthorized(error: unknown): boolean {
  const e = error as { code?: unknown; status?: unknown; name?: unknown; data?: { status?: unknown } };
  if (typeof e.code === 'number') return false;
  return e.status === 401 || e.data?.status === 401 || e.name === 'UnauthorizedError';
}
