import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { AuthzService } from '../../src/adapters/authz/port.js';
import { createMemoryCounterStore } from '../../src/adapters/counters/memory.js';
import { createMcpMetrics } from '../../src/mcp/metrics.js';
import { McpPolicy } from '../../src/mcp/policy.js';
import { type ToolContext, ToolExecutor, type ToolServices, defineTool, textResult } from '../../src/mcp/tools.js';
import { type Caller, principalSubject } from '../../src/ports/caller.js';

/*
 * What a tool's handler is given with each call: the services, who calls, their subject, a log, and a signal: the
 * caller's when the call has one (an MCP request's), else one of its own that nothing aborts.
 */

const caller: Caller = {
  kind: 'service',
  subject: principalSubject('robot'),
  username: 'robot',
  roles: [],
  sessionId: undefined,
  via: 'bearer',
};

function setUp() {
  const seen: ToolContext[] = [];
  const services = {
    logger: pino({ level: 'silent' }),
    authz: { provider: 'embedded', check: () => Promise.resolve(true) } as unknown as AuthzService,
    conversations: { name: 'conversations' },
    search: { name: 'search' },
    chat: { name: 'chat' },
    workflows: { name: 'workflows' },
  } as unknown as ToolServices;
  const tool = defineTool({
    name: 'inspect',
    title: 'Inspect',
    description: 'Keeps the context it was called with',
    inputSchema: {},
    annotations: { readOnlyHint: true },
    forAgent: false,
    handler: (_args, context) => {
      seen.push(context);
      return Promise.resolve(textResult(`signal ${context.signal.aborted ? 'aborted' : 'live'}`));
    },
  });
  const policy = new McpPolicy({
    authz: services.authz,
    counters: createMemoryCounterStore(),
    limits: { requestsPerMinute: 1e9, toolCallsPerMinute: 1e9, maxConcurrentStreams: 100 },
  });
  const executor = new ToolExecutor({ services, policy, metrics: createMcpMetrics(new Registry()) }, [tool]);
  return { executor, tool, services, seen };
}

describe("a tool call's context", () => {
  it('carries the services, the caller and their subject', async () => {
    const { executor, tool, services, seen } = setUp();
    await executor.run(tool, {}, caller);
    const [context] = seen;
    for (const name of ['logger', 'authz', 'conversations', 'search', 'chat', 'workflows'] as const)
      expect(context![name]).toBe(services[name]);
    expect(context!.caller).toBe(caller);
    expect(context!.subject).toBe('service_principal:robot');
    await expect(context!.log('info', 'nobody listens')).resolves.toBeUndefined();
  });

  it("hands on the caller's signal, and a live one of its own to a call without", async () => {
    const { executor, tool, seen } = setUp();
    const stop = new AbortController();
    const log = () => Promise.resolve();
    await executor.run(tool, {}, caller, { signal: stop.signal, log });
    expect(seen[0]!.signal).toBe(stop.signal);
    expect(seen[0]!.log).toBe(log);

    const outcome = await executor.run(tool, {}, caller);
    expect(outcome).toMatchObject({ kind: 'completed', result: { content: [{ text: 'signal live' }] } });
    const own = seen[1]!.signal;
    expect(own).toBeInstanceOf(AbortSignal);
    expect(own.aborted).toBe(false);
    // One signal per call, the same each time the handler looks.
    expect(seen[1]!.signal).toBe(own);
    await executor.run(tool, {}, caller);
    expect(seen[2]!.signal).not.toBe(own);
  });
});
