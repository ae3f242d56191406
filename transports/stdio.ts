import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Lifecycle } from '../src/lifecycle.js';
import type { Logger } from '../src/logger.js';
import type { McpCore } from '../src/mcp/core.js';
import { guardTransport } from '../src/mcp/guard.js';
import type { Caller } from '../src/ports/caller.js';
import { openStreamSlot } from './stream-slot.js';

/**
 * MCP over stdio for desktop clients: stdout carries nothing but JSON-RPC (logs go to stderr). Resolves when the
 * client closes its end.
 */
export async function serveStdio(
  deps: { core: McpCore; lifecycle: Lifecycle; logger: Logger; caller: Caller },
  io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<void> {
  const { core, lifecycle, logger, caller } = deps;
  const server = core.createServer(caller);
  const transport = new StdioServerTransport(io.stdin, io.stdout);
  const closed = new Promise<void>((resolve) => {
    io.stdin.once('end', resolve);
    io.stdin.once('close', resolve);
  });
  // The process's one client: counted as a connection, but not against the caller's concurrent streams.
  const slot = openStreamSlot({ policy: core.policy, metrics: core.metrics, lifecycle }, caller, {
    server: 'stdio',
    limited: false,
  });
  await server.connect(transport);
  guardTransport(transport, {
    policy: core.policy,
    metrics: core.metrics,
    fallbackCaller: caller,
    rateLimit: true,
  });
  logger.info({ user: caller.username }, 'serving MCP on stdio');
  await closed;
  slot.release();
  await server.close();
}
