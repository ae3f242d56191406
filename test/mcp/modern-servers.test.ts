import { createMcpHandler } from '@modelcontextprotocol/server';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { AuthzService } from '../../src/adapters/authz/port.js';
import { createMemoryCounterStore } from '../../src/adapters/counters/memory.js';
import { McpCore } from '../../src/mcp/core.js';
import { createMcpMetrics } from '../../src/mcp/metrics.js';
import { callerOfAuthInfo } from '../../src/mcp/modern.js';
import { McpPolicy, toolObject } from '../../src/mcp/policy.js';
import type { PublishedChange, PublishedWorkflow, PublishedWorkflows } from '../../src/ports/published-workflows.js';
import { authInfoFor } from '../../src/mcp/server.js';
import { type ToolDefinition, ToolExecutor, type ToolServices, defineTool, textResult } from '../../src/mcp/tools.js';
import type { ConversationsService } from '../../src/modules/conversations/index.js';
import { type Caller, principalSubject } from '../../src/ports/caller.js';
import { MODERN_REVISION, modernBody } from '../helpers/mcp.js';

/*
 * The servers of the 2026-07-28 revision are lent to one request at a time and reused: these drive the SDK's own
 * `createMcpHandler` over them, as the streamable HTTP wire does, with callers whose permissions differ, and check
 * that nothing of one request (its caller, its answer, its notifications, its client) reaches another.
 */

const caller = (name: string): Caller => ({
  kind: 'service',
  subject: principalSubject(name),
  username: name,
  roles: [],
  sessionId: undefined,
  via: 'bearer',
});
const alice = caller('alice');
const bob = caller('bob');

/** A gate a tool waits at, and a signal that it got there. */
function gate() {
  let open!: () => void;
  let arrived!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  return { open, opened, arrived, reached };
}

const gates = new Map<string, ReturnType<typeof gate>>();

const TOOLS: ToolDefinition[] = [
  defineTool({
    name: 'whoami',
    title: 'Who am I',
    description: 'Names the caller, after a pause of `wait` ms',
    inputSchema: { wait: z.number().int().min(0).max(100).default(0) },
    annotations: { readOnlyHint: true },
    forAgent: false,
    async handler({ wait }, ctx) {
      await ctx.log('info', `log for ${ctx.subject}`);
      await new Promise((resolve) => setTimeout(resolve, wait));
      return textResult(ctx.subject);
    },
  }),
  defineTool({
    name: 'private',
    title: 'Private',
    description: 'Only some callers may call it; it changes data',
    inputSchema: {},
    annotations: { readOnlyHint: false },
    forAgent: false,
    handler: (_args, ctx) => Promise.resolve(textResult(`private for ${ctx.subject}`)),
  }),
  defineTool({
    name: 'slow',
    title: 'Slow',
    description: 'Waits at the named gate, paying no heed to cancellation, then logs what it has for its caller',
    inputSchema: { gate: z.string() },
    annotations: { readOnlyHint: true },
    forAgent: false,
    async handler(args, ctx) {
      const at = gates.get(args.gate)!;
      at.arrived();
      await at.opened;
      await ctx.log('info', `secret of ${ctx.subject}`).catch(() => undefined);
      return textResult(`done for ${ctx.subject}`);
    },
  }),
];

/** The published workflows, changed by the tests. */
function publishedWorkflows() {
  const entries = new Map<string, PublishedWorkflow>();
  const listeners = new Set<(change: PublishedChange) => void>();
  const workflows: PublishedWorkflows = {
    list: () => [...entries.values()],
    runnableBy: () => Promise.resolve(new Set(entries.keys())),
    run: (who, workflowId) => Promise.resolve(textResult(`ran ${workflowId} for ${who.subject}`)),
    resume: () => Promise.reject(new Error('not asked')),
    cancel: () => Promise.resolve(),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    workflows,
    publish(workflow: PublishedWorkflow) {
      entries.set(workflow.workflowId, workflow);
      for (const listener of listeners) listener({ kind: 'published', workflow });
    },
    unpublish(workflowId: string) {
      const toolName = entries.get(workflowId)!.toolName;
      entries.delete(workflowId);
      for (const listener of listeners) listener({ kind: 'unpublished', toolName });
    },
  };
}

/** Who may use which tool: `subject → tools`; every caller may use `whoami` and `slow`. */
function setUp(kept = 64) {
  const grants = new Map<string, Set<string>>([
    [alice.subject, new Set(['whoami', 'slow', 'private'])],
    [bob.subject, new Set(['whoami', 'slow'])],
  ]);
  const authz = {
    provider: 'embedded',
    check: (user: string, _relation: string, object: string) =>
      Promise.resolve([...(grants.get(user) ?? [])].some((tool) => toolObject(tool) === object)),
  } as unknown as AuthzService;
  const policy = new McpPolicy({
    authz,
    counters: createMemoryCounterStore(),
    limits: { requestsPerMinute: 1e9, toolCallsPerMinute: 1e9, maxConcurrentStreams: 100 },
  });
  const logger = pino({ level: 'silent' });
  const metrics = createMcpMetrics(new Registry());
  const executor = new ToolExecutor({ services: { logger } as unknown as ToolServices, policy, metrics }, TOOLS);
  const published = publishedWorkflows();
  const core = new McpCore({
    server: {
      executor,
      policy,
      conversations: {} as ConversationsService,
      describe: () => ({}),
      published: published.workflows,
    },
    policy,
    metrics,
    logger,
    modernServersKept: kept,
  });
  const handler = createMcpHandler((ctx) => core.createModernServer(callerOfAuthInfo(ctx.authInfo)), {
    legacy: 'reject',
  });

  /** One request of the revision, answered through the handler: its status and its messages, in order. */
  const send = async (
    who: Caller,
    method: string,
    params: Record<string, unknown>,
    options: { id?: number; signal?: AbortSignal; logLevel?: string; clientName?: string } = {},
  ) => {
    const body = modernBody(method, params) as { id: number; params: { _meta: Record<string, unknown> } };
    body.id = options.id ?? 1;
    if (options.logLevel) body.params._meta['io.modelcontextprotocol/logLevel'] = options.logLevel;
    if (options.clientName)
      body.params._meta['io.modelcontextprotocol/clientInfo'] = { name: options.clientName, version: '1' };
    const name = method === 'tools/call' ? params.name : undefined;
    const request = new Request('http://localhost/mcp', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Protocol-Version': MODERN_REVISION,
        'Mcp-Method': method,
        ...(typeof name === 'string' && { 'Mcp-Name': name }),
      },
      body: JSON.stringify(body),
      ...(options.signal && { signal: options.signal }),
    });
    await core.loadModern();
    const res = await handler.fetch(request, { authInfo: authInfoFor(who) });
    const text = await res.text();
    const messages = res.headers.get('content-type')?.includes('text/event-stream')
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>)
      : text
        ? [JSON.parse(text) as Record<string, unknown>]
        : [];
    return { status: res.status, text, messages, last: messages.at(-1) as { result?: unknown; error?: unknown } };
  };
  const call = (
    who: Caller,
    name: string,
    args: Record<string, unknown> = {},
    options: Parameters<typeof send>[3] = {},
  ) => send(who, 'tools/call', { name, arguments: args }, options);
  const textOf = (reply: Awaited<ReturnType<typeof send>>) =>
    (reply.last?.result as { content?: { text: string }[] } | undefined)?.content?.[0]?.text;
  const listed = async (who: Caller) =>
    ((await send(who, 'tools/list', {})).last?.result as { tools: { name: string }[] }).tools.map((t) => t.name);

  return { core, handler, published, grants, send, call, textOf, listed };
}

afterEach(() => {
  vi.useRealTimers();
  gates.clear();
});

describe('servers of the 2026-07-28 revision, reused across requests', () => {
  it('serves one caller after another on the same server, each as themselves', async () => {
    const { core, call, textOf } = setUp();
    for (const who of [alice, bob, alice, bob, bob, alice]) expect(textOf(await call(who, 'whoami'))).toBe(who.subject);
    // One server answered all six: nothing of a caller stays on it.
    expect(core.modernServers).toEqual({ idle: 1, built: 1 });
  });

  it('answers interleaved concurrent requests of callers with different permissions each by their own', async () => {
    const { core, call, textOf, listed } = setUp();
    const requests = Array.from({ length: 40 }, (_, i) => {
      const who = i % 2 === 0 ? alice : bob;
      const wait = (i * 7) % 11;
      return i % 4 < 2
        ? call(who, 'whoami', { wait }, { logLevel: 'info' }).then((reply) => ({ who, kind: 'whoami', reply }))
        : call(who, 'private').then((reply) => ({ who, kind: 'private', reply }));
    });
    for (const { who, kind, reply } of await Promise.all(requests)) {
      const result = reply.last?.result as { isError: boolean; content: { text: string }[] };
      if (kind === 'whoami') {
        expect(result.content[0]?.text).toBe(who.subject);
        // The tool's log message went to its own caller's reply, and to no one else's.
        expect(reply.text).toContain(`log for ${who.subject}`);
        expect(reply.text).not.toContain(`log for ${(who === alice ? bob : alice).subject}`);
      } else if (who === alice) {
        expect(result).toMatchObject({ isError: false, content: [{ text: `private for ${alice.subject}` }] });
      } else {
        expect(result).toMatchObject({
          isError: true,
          content: [{ text: 'Permission denied: you may not call the tool private' }],
        });
      }
    }
    // Concurrent requests got servers of their own, which were kept for the next ones.
    const { idle, built } = core.modernServers;
    expect(built).toBeGreaterThan(1);
    expect(idle).toBe(built);
    expect(await listed(alice)).toContain('private');
    expect(await listed(bob)).not.toContain('private');
    expect(textOf(await call(bob, 'whoami'))).toBe(bob.subject);
    expect(core.modernServers.built).toBe(built);
  });

  it('takes a revocation or a grant into account from the next request on the same server', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { core, grants, call, textOf, listed } = setUp();
    expect(textOf(await call(bob, 'private'))).toBe('Permission denied: you may not call the tool private');
    expect(await listed(bob)).not.toContain('private');

    grants.get(bob.subject)!.add('private');
    expect(textOf(await call(bob, 'private'))).toBe(`private for ${bob.subject}`);
    // Listings reuse a caller's visible tools for a second (the policy point's own cache), no more.
    vi.setSystemTime(Date.now() + 1_100);
    expect(await listed(bob)).toContain('private');

    grants.get(bob.subject)!.delete('private');
    expect(textOf(await call(bob, 'private'))).toBe('Permission denied: you may not call the tool private');
    vi.setSystemTime(Date.now() + 1_100);
    expect(await listed(bob)).not.toContain('private');
    expect(core.modernServers.built).toBe(1);
  });

  it('does not lend again a server whose request was abandoned while its handler still runs', async () => {
    // One server kept: if the abandoned request's server were given back, the next request would get it.
    const { core, call } = setUp(1);
    gates.set('a', gate());
    gates.set('b', gate());
    const abandon = new AbortController();
    const first = call(alice, 'slow', { gate: 'a' }, { id: 7, logLevel: 'debug', signal: abandon.signal });
    await gates.get('a')!.reached;
    abandon.abort();
    expect((await first).status).toBe(499);

    // Bob's request has the same id as Alice's; it is in flight when Alice's tool, still running, logs.
    const second = call(bob, 'slow', { gate: 'b' }, { id: 7, logLevel: 'debug' });
    await gates.get('b')!.reached;
    gates.get('a')!.open();
    await new Promise((resolve) => setTimeout(resolve, 10));
    gates.get('b')!.open();
    const reply = await second;
    expect(reply.text).toContain(`secret of ${bob.subject}`);
    expect(reply.text).not.toContain(alice.subject);
    expect(reply.last?.result).toMatchObject({ content: [{ text: `done for ${bob.subject}` }] });
    expect(core.modernServers).toEqual({ idle: 1, built: 2 });
  });

  it('forgets the client of the request it answered', async () => {
    const { core, call } = setUp();
    await call(alice, 'whoami', {}, { clientName: 'alice-client' });
    const server = core.createModernServer();
    // The server just used, lent again: it knows nothing of the previous request's client.
    expect(server.server.getClientVersion()).toBeUndefined();
    expect(server.server.getClientCapabilities()).toBeUndefined();
    await server.close();
    expect(core.modernServers).toEqual({ idle: 1, built: 1 });
  });

  it('keeps at most the number of idle servers it is told, however many requests ran at once', async () => {
    const { core, call } = setUp(3);
    const names = Array.from({ length: 10 }, (_, i) => `g${i}`);
    for (const name of names) gates.set(name, gate());
    const calls = names.map((name, i) => call(i % 2 ? alice : bob, 'slow', { gate: name }));
    await Promise.all(names.map((name) => gates.get(name)!.reached));
    for (const name of names) gates.get(name)!.open();
    for (const reply of await Promise.all(calls)) expect(reply.last?.result).toMatchObject({ isError: false });
    expect(core.modernServers).toEqual({ idle: 3, built: 10 });
    await core.close();
    expect(core.modernServers.idle).toBe(0);
  });

  it('gives back a server the handler closes without serving it (a subscription, a scope challenge)', async () => {
    const { core, handler, send, call } = setUp();
    // A token narrowed to reading is asked to step up before a tool that changes data: 403, the tool not run.
    const challenged = await call({ ...alice, scopes: ['mcp:read'] }, 'private');
    expect(challenged.status).toBe(403);
    expect(core.modernServers).toEqual({ idle: 1, built: 1 });

    const listen = new AbortController();
    const stream = send(
      alice,
      'subscriptions/listen',
      { notifications: { toolsListChanged: true } },
      {
        signal: listen.signal,
      },
    ).catch(() => undefined);
    await vi.waitFor(() => expect(core.modernServers).toEqual({ idle: 1, built: 1 }));
    listen.abort();
    await handler.close();
    await stream;
  });

  it('offers a workflow from the first request after it is published, and no longer once it is withdrawn', async () => {
    const { core, published, call, textOf } = setUp();
    const workflow = { workflowId: 'w1', toolName: 'wf_hello', title: 'Hello', description: 'Says hello' };
    await Promise.all([call(alice, 'whoami', { wait: 5 }), call(bob, 'whoami', { wait: 5 })]);
    expect(core.modernServers).toEqual({ idle: 2, built: 2 });
    expect(JSON.stringify((await call(alice, 'wf_hello', { input: 'hi' })).last)).toContain('wf_hello not found');

    // A server lent while the offer changes is not kept: it registered what was on offer before.
    gates.set('during', gate());
    const during = call(bob, 'slow', { gate: 'during' });
    await gates.get('during')!.reached;
    published.publish(workflow);
    expect(core.modernServers).toEqual({ idle: 0, built: 2 });
    expect(textOf(await call(alice, 'wf_hello', { input: 'hi' }))).toBe(`ran w1 for ${alice.subject}`);
    gates.get('during')!.open();
    await during;
    expect(core.modernServers).toEqual({ idle: 1, built: 3 });

    published.unpublish('w1');
    const withdrawn = await call(alice, 'wf_hello', { input: 'hi' });
    expect(JSON.stringify(withdrawn.last)).toContain('wf_hello not found');
  });
});
