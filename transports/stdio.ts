import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { App } from '../src/app.js';
import { UnauthorizedError } from '../src/errors.js';
import { guardTransport } from '../src/mcp/guard.js';
import { type Caller, userSubject } from '../src/ports/caller.js';
import { openStreamSlot } from './stream-slot.js';

/**
 * Who a stdio session acts as. Whoever can start the process owns its database anyway, so by default it is the
 * bootstrap administrator; `STDIO_USER` names another user and `STDIO_API_KEY` acts as that key's owner.
 */
export async function stdioCaller(app: App): Promise<Caller> {
  const { apiKey, username } = app.config.mcp.stdio;
  if (apiKey) return { ...(await app.apiKeys.authenticate(apiKey)), via: 'stdio' };
  const name = username ?? app.config.auth.adminUsername;
  const user = await app.users.getByUsername(name);
  if (!user?.active) throw new UnauthorizedError(`No active user named ${name} for the stdio session (set STDIO_USER)`);
  return {
    kind: 'user',
    subject: userSubject(user.id),
    username: user.username,
    roles: user.roles,
    sessionId: undefined,
    via: 'stdio',
  };
}

/**
 * MCP over stdio for desktop clients: stdout carries nothing but JSON-RPC (logs go to stderr). Resolves when the
 * client closes its end.
 */
export async function serveStdio(
  app: App,
  io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<void> {
  const caller = await stdioCaller(app);
  const server = app.mcp.createServer(caller);
  const transport = new StdioServerTransport(io.stdin, io.stdout);
  const closed = new Promise<void>((resolve) => {
    io.stdin.once('end', resolve);
    io.stdin.once('close', resolve);
  });
  // The process's one client: counted as a connection, but not against the caller's concurrent streams.
  const slot = openStreamSlot({ policy: app.mcp.policy, metrics: app.mcp.metrics, lifecycle: app.lifecycle }, caller, {
    server: 'stdio',
    limited: false,
  });
  await server.connect(transport);
  guardTransport(transport, {
    policy: app.mcp.policy,
    metrics: app.mcp.metrics,
    fallbackCaller: caller,
    rateLimit: true,
  });
  app.logger.info({ user: caller.username }, 'serving MCP on stdio');
  await closed;
  slot.release();
  await server.close();
}
