import type { App } from '../../src/app.js';
import { digestOf } from '../../src/modules/connections/connected-tools.js';
import { saveAccount, upsertPin } from '../../src/modules/connections/connections.store.js';
import { userCaller } from '../../src/ports/caller.js';
import type { ConnectedTool } from '../../src/ports/connected-tools.js';
import { startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, TestClock, createUser } from '../helpers/auth.js';
import { MODERN_REVISION, TASKS_CAPABILITY, postModern } from '../helpers/mcp.js';
import { authorizeClient, openAuthorization, pkce, register } from '../helpers/oauth.js';
import { GROUP, USER } from '../scim/helpers.js';
import { askThenAnswer, linear } from '../builder/helpers.js';
import { type Answer, type Listener, type Request, eventIds, send } from './wire.js';

/**
 * The world of the impersonation matrix: an owner with one of everything a caller can own, and the callers who
 * must not reach it. The owner is the bootstrap administrator, so that the administrators' routes have an owner
 * too; everyone else is an ordinary user.
 */

/** Written into everything the owner owns: no answer to anyone else may contain it. */
export const MARKER = 'Zq7OwnerSecret';

export const ATTACKERS = ['other', 'principal', 'apiKey', 'expired', 'revoked', 'none'] as const;
export type Attacker = (typeof ATTACKERS)[number];
export type Caller = 'owner' | Attacker;
/** The callers that present no valid credential at all. */
export const UNAUTHENTICATED: readonly Attacker[] = ['expired', 'revoked', 'none'];

const ACCESS_TOKEN_TTL_SECONDS = 900;

/** Another user's identity: a login, a service principal of theirs and an API key of theirs. */
export interface Identity {
  username: string;
  userId: string;
  token: string;
  principalId: string;
  principalSecret: string;
  principalToken: string;
  apiKey: string;
}

/** Everything the owner owns, by id. */
export interface Owned {
  userId: string;
  username: string;
  /** A login session of the owner's other than the one the matrix reads with (DELETE /auth/sessions/{id}). */
  spareSessionId: string;
  spareRefreshToken: string;
  apiKeyId: string;
  principalId: string;
  principalSecret: string;
  grantId: string;
  conversationId: string;
  playgroundSessionId: string;
  workflowId: string;
  /** A second workflow, published, waiting in a run for a human answer. */
  askingWorkflowId: string;
  askingTool: string;
  runId: string;
  /** Tasks of the Tasks extension, each waiting for an answer: one to answer, one to cancel. */
  answerTaskId: string;
  cancelTaskId: string;
  /** The request state of an `input_required` reply, with the key of the question it asks. */
  requestState: string;
  inputKey: string;
  /** The owner's streamable HTTP session, and the id of an event on it just before one that carries the marker. */
  mcpSessionId: string;
  lastEventId: string;
  /** The owner's legacy SSE session, held open for the whole file. */
  sseSessionId: string;
  scimUserId: string;
  scimGroupId: string;
  /** A consent request of the owner's browser: the form's hidden fields and its cookie. */
  consent: { request: string; csrf: string; cookie: string };
  /** A personal connection of the owner's (no credential), with a tool held after its definition changed upstream. */
  connectionId: string;
  heldTool: string;
  /** A personal OAuth connection of the owner's, with the owner's account at it connected. */
  oauthConnectionId: string;
  /** A call of a connected tool of the owner's that waits for the owner's approval. */
  approvalId: string;
}

export interface World {
  app: App;
  clock: TestClock;
  owner: { token: string; expired: string; revoked: string };
  owned: Owned;
  /** The other user, whose credentials attack. */
  other: Identity;
  /** A third user, the attacker of the routes that end the caller's own account or session. */
  spare: Identity;
  /** Streamable HTTP sessions of the attackers' own, for the requests that need one of theirs. */
  attackerSessions: Partial<Record<Caller, string>>;
  close: () => Promise<void>;
}

/** The request header that carries a caller's credential. */
export function credentialOf(world: World, caller: Caller, identity: Identity = world.other): Record<string, string> {
  switch (caller) {
    case 'owner':
      return { Authorization: `Bearer ${world.owner.token}` };
    case 'other':
      return { Authorization: `Bearer ${identity.token}` };
    case 'principal':
      return { Authorization: `Bearer ${identity.principalToken}` };
    case 'apiKey':
      return { 'X-API-Key': identity.apiKey };
    case 'expired':
      return { Authorization: `Bearer ${world.owner.expired}` };
    case 'revoked':
      return { Authorization: `Bearer ${world.owner.revoked}` };
    case 'none':
      return {};
  }
}

async function ok(app: App, request: Request, expected = [200, 201, 202, 204]): Promise<Answer> {
  const answer = await send(app, request);
  if (!expected.includes(answer.status))
    throw new Error(`fixture ${request.method} ${request.path}: ${answer.status} ${answer.text.slice(0, 300)}`);
  return answer;
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const field = (answer: Answer, name: string) => (answer.json as Record<string, unknown>)[name] as string;

async function login(app: App, username: string, password: string) {
  const answer = await ok(app, { listener: 'main', method: 'POST', path: '/auth/login', body: { username, password } });
  return { token: field(answer, 'access_token'), refresh: field(answer, 'refresh_token') };
}

/** Mints a fresh access token for a service principal from its secret. */
export async function principalToken(app: App, id: string, secret: string): Promise<string> {
  const answer = await ok(app, {
    listener: 'main',
    method: 'POST',
    path: '/auth/token',
    form: { grant_type: 'client_credentials', client_id: id, client_secret: secret },
  });
  return field(answer, 'access_token');
}

/** Logs in as a user anew: a token of a session of its own, which a logout may end without harm. */
export async function freshToken(app: App, username: string): Promise<string> {
  return (await login(app, username, PASSWORD)).token;
}

async function identity(app: App, username: string): Promise<Identity> {
  const user = await createUser(app, username);
  const { token } = await login(app, username, PASSWORD);
  const principal = await ok(app, {
    listener: 'main',
    method: 'POST',
    path: '/api/v1/service-principals',
    headers: bearer(token),
    body: { name: `${username} bot`, description: `A robot of ${username}'s` },
  });
  const key = await ok(app, {
    listener: 'main',
    method: 'POST',
    path: '/api/v1/api-keys',
    headers: bearer(token),
    body: { name: `${username}'s key` },
  });
  const principalId = field(principal, 'service_id');
  const principalSecret = field(principal, 'client_secret');
  return {
    username,
    userId: user.id,
    token,
    principalId,
    principalSecret,
    principalToken: await principalToken(app, principalId, principalSecret),
    apiKey: field(key, 'api_key'),
  };
}

/** Opens a 2025-era streamable HTTP session (protocol 2025-11-25, whose streams start with a priming event). */
export async function openMcpSession(app: App, headers: Record<string, string>): Promise<string> {
  const answer = await ok(app, {
    listener: 'main',
    method: 'POST',
    path: '/mcp',
    headers: { ...headers, Accept: 'application/json, text/event-stream' },
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'matrix', version: '1.0.0' } },
    },
  });
  const id = answer.headers.get('mcp-session-id');
  if (!id) throw new Error('no Mcp-Session-Id');
  await ok(app, {
    listener: 'main',
    method: 'POST',
    path: '/mcp',
    headers: { ...headers, ...sessionHeaders(id) },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  return id;
}

export const sessionHeaders = (id: string) => ({
  'Mcp-Session-Id': id,
  'Mcp-Protocol-Version': '2025-11-25',
  Accept: 'application/json, text/event-stream',
});

/** The headers of a 2026-07-28 request (its `_meta` envelope is in the body, see `modernBody` in test/helpers/mcp.ts). */
export function modernHeaders(method: string, name?: string): Record<string, string> {
  return {
    Accept: 'application/json, text/event-stream',
    'Mcp-Protocol-Version': MODERN_REVISION,
    'Mcp-Method': method,
    ...(name !== undefined && { 'Mcp-Name': name }),
  };
}

const FORMS = { elicitation: { form: {} } };

/** Starts a task of the owner's on the asking workflow and waits until it asks its question. */
async function waitingTask(app: App, token: string, tool: string): Promise<string> {
  const created = await postModern(
    app,
    token,
    'tools/call',
    { name: tool, arguments: { input: MARKER } },
    TASKS_CAPABILITY,
  );
  const taskId = created.result?.taskId as string | undefined;
  if (!taskId) throw new Error(`no task: ${JSON.stringify(created)}`);
  for (let i = 0; i < 200; i++) {
    const got = await postModern(app, token, 'tasks/get', { taskId }, TASKS_CAPABILITY);
    if (got.result?.status === 'input_required') return taskId;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the task never asked its question');
}

const UPSTREAM = 'https://upstream.example/mcp';

/**
 * The owner's connected MCP servers. Registering one does not contact its URL (nothing answers there: a test of it
 * answers ok:false, its tools are the pinned ones). What only a live upstream or an OAuth sign-in would produce is
 * written where the service keeps it: a tool whose definition changed upstream (held until approved), the owner's
 * account at the OAuth connection, and a call of a destructive tool waiting for the owner's approval.
 */
async function ownerConnections(app: App, clock: TestClock, token: string, ownerId: string) {
  const create = async (body: Record<string, unknown>) =>
    (
      await ok(app, {
        listener: 'main',
        method: 'POST',
        path: '/api/v1/connections',
        headers: bearer(token),
        body: { transport: 'streamable_http', url: UPSTREAM, ...body },
      })
    ).json as { id: string; slug: string; name: string };
  const plain = await create({ name: `conn ${MARKER}` });
  const oauth = await create({ name: `OAuth conn ${MARKER}`, auth: { kind: 'oauth', scopes: 'read' } });

  const db = app.infrastructure.db.kysely;
  const now = clock.now().toISOString();
  const inputSchema = { type: 'object' as const, properties: { item: { type: 'string' } } };
  const approved = { name: 'delete_item', description: 'Deletes an item', inputSchema, annotations: {} };
  const changed = { ...approved, description: `Deletes an item, and sends it to ${MARKER}` };
  await upsertPin(db, {
    connection_id: plain.id,
    name: 'delete_item',
    definition: JSON.stringify(approved),
    digest: digestOf(approved),
    pending: JSON.stringify(changed),
    pending_digest: digestOf(changed),
    updated_at: now,
  });
  // Stand-in tokens, stored as JSON text (the sealer opens values from before encryption as they are).
  await saveAccount(db, {
    connection_id: oauth.id,
    user_id: ownerId,
    tokens: JSON.stringify({ access_token: `upstream token ${MARKER}` }),
    expires_at: null,
    connected_at: now,
    updated_at: now,
  });

  const tool: ConnectedTool = {
    name: `${plain.slug}__delete_item`,
    upstreamName: 'delete_item',
    description: approved.description,
    inputSchema,
    annotations: {},
    server: { id: plain.id, slug: plain.slug, name: plain.name, transport: 'streamable_http', url: UPSTREAM },
    object: `tool:${plain.id}.delete_item`,
    asksFirst: true,
  };
  const owner = userCaller({ id: ownerId, username: 'admin', roles: [] }, { via: 'bearer' });
  const asked = await app.services.connections.catalog.approval(owner, tool, { item: `item ${MARKER}` });
  if (!('approvalId' in asked)) throw new Error('the call was not held for approval');
  return { connectionId: plain.id, heldTool: 'delete_item', oauthConnectionId: oauth.id, approvalId: asked.approvalId };
}

/** Builds the whole world through the public API (what no API makes: see `ownerConnections`). */
export async function buildWorld(): Promise<World> {
  const clock = new TestClock(Date.now());
  const app = await startTestApp(
    {
      ADMIN_PASSWORD,
      ACCESS_TOKEN_TTL_SECONDS: String(ACCESS_TOKEN_TTL_SECONDS),
      // The matrix sends hundreds of requests as a handful of callers: budgets are not what it tests.
      MCP_REQUESTS_PER_MINUTE: '1000000',
      MCP_TOOL_CALLS_PER_MINUTE: '1000000',
      MCP_MAX_CONCURRENT_STREAMS: '1000',
      LOGIN_MAX_FAILURES: '1000',
      LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
    },
    { now: clock.now },
  );
  try {
    return await populate(app, clock);
  } catch (error) {
    await app.close();
    throw error;
  }
}

async function populate(app: App, clock: TestClock): Promise<World> {
  const main = (request: Omit<Request, 'listener'>) => ok(app, { listener: 'main', ...request });
  const at = (listener: Listener, request: Omit<Request, 'listener'>) => ok(app, { listener, ...request });

  // An access token of the owner's that has expired: issued, then the clock moved past its lifetime.
  const expired = (await login(app, 'admin', ADMIN_PASSWORD)).token;
  clock.advance((ACCESS_TOKEN_TTL_SECONDS + 60) * 1000);
  // One of a session the owner logged out of.
  const revoked = (await login(app, 'admin', ADMIN_PASSWORD)).token;
  await main({ method: 'POST', path: '/auth/logout', headers: bearer(revoked) });

  const { token } = await login(app, 'admin', ADMIN_PASSWORD);
  const auth = bearer(token);
  const me = await main({ method: 'GET', path: '/auth/me', headers: auth });
  const spare = await login(app, 'admin', ADMIN_PASSWORD);
  const sessions = await main({ method: 'GET', path: '/auth/sessions', headers: bearer(spare.token) });
  const spareSessionId = (sessions.json as { sessions: { session_id: string; is_current: boolean }[] }).sessions.find(
    (s) => s.is_current,
  )!.session_id;

  await main({ method: 'PATCH', path: '/api/v1/users/me', headers: auth, body: { name: `Owner ${MARKER}` } });
  await main({
    method: 'POST',
    path: '/api/v1/users/me/consent',
    headers: auth,
    body: { consent_type: 'analytics', granted: true },
  });
  const key = await main({ method: 'POST', path: '/api/v1/api-keys', headers: auth, body: { name: `key ${MARKER}` } });
  const principal = await main({
    method: 'POST',
    path: '/api/v1/service-principals',
    headers: auth,
    body: { name: 'Owner robot', description: `robot ${MARKER}` },
  });
  const { clientId } = await authorizeClient(app, 'admin', ADMIN_PASSWORD, undefined, undefined, {
    client_name: `IDE ${MARKER}`,
  });
  const grants = await main({ method: 'GET', path: '/api/v1/oauth/grants', headers: auth });
  const grantId = (grants.json as { grants: { grant_id: string; client_id: string }[] }).grants.find(
    (g) => g.client_id === clientId,
  )!.grant_id;

  // A consent request of the owner's browser, not yet answered.
  const registered = await register(app, {
    client_name: 'Pending IDE',
    redirect_uris: ['http://127.0.0.1:40114/callback'],
  });
  const authorize = new URL(`${app.url('main')}/oauth/authorize`);
  const { challenge } = pkce();
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: registered.body.client_id as string,
    redirect_uri: 'http://127.0.0.1:40114/callback',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'matrix',
  }))
    authorize.searchParams.set(name, value);
  const page = await openAuthorization(authorize);
  if (page.status !== 200 || !page.request) throw new Error(`no consent page: ${page.status}`);

  const message = await main({
    method: 'POST',
    path: '/mcp/message',
    headers: auth,
    body: { query: `Remember ${MARKER}`, use_tools: false },
  });
  const conversationId = field(message, 'conversation_id');

  const playgroundSession = await at('playground', {
    method: 'POST',
    path: '/api/playground/sessions',
    headers: auth,
    body: { name: `Session ${MARKER}`, metadata: { note: MARKER } },
  });
  const playgroundSessionId = field(playgroundSession, 'session_id');
  await at('playground', {
    method: 'POST',
    path: '/api/playground/chat',
    headers: auth,
    body: { session_id: playgroundSessionId, message: `Hello ${MARKER}` },
  });

  const workflow = await at('builder', {
    method: 'POST',
    path: '/api/builder/workflows',
    headers: auth,
    body: { ...linear(`Flow ${MARKER}`), description: MARKER, tags: ['matrix'] },
  });
  const workflowId = field(workflow, 'workflow_id');
  await at('builder', {
    method: 'PUT',
    path: `/api/builder/workflows/${workflowId}`,
    headers: auth,
    body: { ...linear(`Flow ${MARKER} v2`), description: MARKER, tags: ['matrix'] },
  });
  const asking = await at('builder', {
    method: 'POST',
    path: '/api/builder/workflows',
    headers: auth,
    body: askThenAnswer(`Ask ${MARKER}`),
  });
  const askingWorkflowId = field(asking, 'workflow_id');
  const published = await at('builder', {
    method: 'POST',
    path: `/api/builder/workflows/${askingWorkflowId}/publish`,
    headers: auth,
  });
  const askingTool = field(published, 'tool_name');
  const run = await at('builder', {
    method: 'POST',
    path: `/api/builder/workflows/${askingWorkflowId}/run`,
    headers: { ...auth, Accept: 'text/event-stream' },
    body: { input: MARKER },
  });
  const runId = /"run_id":"([^"]+)"/.exec(run.text)?.[1];
  if (!runId) throw new Error(`no run id in ${run.text.slice(0, 300)}`);

  const answerTaskId = await waitingTask(app, token, askingTool);
  const cancelTaskId = await waitingTask(app, token, askingTool);
  const asked = await postModern(app, token, 'tools/call', { name: askingTool, arguments: { input: MARKER } }, FORMS);
  const { requestState, inputRequests } = asked.result as { requestState: string; inputRequests: object };
  if (!requestState) throw new Error(`no input_required: ${JSON.stringify(asked)}`);

  // The owner's streamable HTTP session, and a call on it whose answer (with the marker) is kept for resumption.
  const mcpSessionId = await openMcpSession(app, auth);
  const read = await main({
    method: 'POST',
    path: '/mcp',
    headers: { ...auth, ...sessionHeaders(mcpSessionId) },
    body: {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'conversation_get', arguments: { conversation_id: conversationId } },
    },
  });
  const ids = eventIds(read.text);
  if (ids.length < 2 || !read.text.includes(MARKER)) throw new Error(`no resumable answer: ${read.text.slice(0, 300)}`);

  // The owner's legacy SSE session, open for the whole file.
  const sse = new AbortController();
  const stream = await fetch(`${app.url('main')}/sse`, { headers: auth, signal: sse.signal });
  const reader = stream.body!.getReader();
  let head = '';
  while (!/sessionId=([0-9a-f-]+)/.test(head))
    head += new TextDecoder().decode((await reader.read()).value as Uint8Array);
  const sseSessionId = /sessionId=([0-9a-f-]+)/.exec(head)![1]!;
  // Keep reading, so that the stream's answers never back up.
  void (async () => {
    try {
      while (!(await reader.read()).done);
    } catch {
      // Aborted when the file ends.
    }
  })();

  const scimUser = await main({
    method: 'POST',
    path: '/scim/v2/Users',
    headers: { ...auth, 'Content-Type': 'application/scim+json' },
    body: { schemas: [USER], userName: 'provisioned', name: { givenName: MARKER, familyName: 'Person' } },
  });
  const scimUserId = field(scimUser, 'id');
  const scimGroup = await main({
    method: 'POST',
    path: '/scim/v2/Groups',
    headers: { ...auth, 'Content-Type': 'application/scim+json' },
    body: { schemas: [GROUP], displayName: `Group ${MARKER}`, members: [{ value: scimUserId }] },
  });

  const connections = await ownerConnections(app, clock, token, field(me, 'id'));

  const other = await identity(app, 'bob');
  const spareIdentity = await identity(app, 'mallory');
  const attackerSessions: Partial<Record<Caller, string>> = {
    other: await openMcpSession(app, bearer(other.token)),
    principal: await openMcpSession(app, bearer(other.principalToken)),
    apiKey: await openMcpSession(app, { 'X-API-Key': other.apiKey }),
  };

  return {
    app,
    clock,
    owner: { token, expired, revoked },
    owned: {
      userId: field(me, 'id'),
      username: 'admin',
      spareSessionId,
      spareRefreshToken: spare.refresh,
      apiKeyId: field(key, 'key_id'),
      principalId: field(principal, 'service_id'),
      principalSecret: field(principal, 'client_secret'),
      grantId,
      conversationId,
      playgroundSessionId,
      workflowId,
      askingWorkflowId,
      askingTool,
      runId,
      answerTaskId,
      cancelTaskId,
      requestState,
      inputKey: Object.keys(inputRequests)[0]!,
      mcpSessionId,
      lastEventId: ids[0]!,
      sseSessionId,
      scimUserId,
      scimGroupId: field(scimGroup, 'id'),
      consent: { request: page.request, csrf: page.csrf, cookie: page.cookie },
      ...connections,
    },
    other,
    spare: spareIdentity,
    attackerSessions,
    close: async () => {
      sse.abort();
      await app.close();
    },
  };
}
