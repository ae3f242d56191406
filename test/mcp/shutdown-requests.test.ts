import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { SERVICE_STOPPING } from '../../src/mcp/guard.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, createUser } from '../helpers/auth.js';
import { restoreGlobalWebSocketAfterEach, sdkTransports } from '../helpers/mcp.js';

/**
 * A tool call in flight on a connection-based MCP wire (streamable HTTP session, legacy SSE, WebSocket) when the
 * service stops: the connection closes only once the call is answered, with its result if it finishes within the
 * drain, or with the stopping error at the drain's deadline. Never a bare close that leaves the client waiting.
 * The offline model is paced so that the answer is still being written when the service begins to stop.
 */
restoreGlobalWebSocketAfterEach();

const words = (n: number) => Array.from({ length: n }, () => 'a').join(' ');

async function callDuringShutdown(wire: keyof typeof sdkTransports, env: Record<string, string>, query: string) {
  const app = await startTestApp({ OFFLINE_LLM_WORD_DELAY_MS: '20', ...env });
  await createUser(app, 'alice');
  const token = await accessToken(app, 'alice');
  const client = new Client({ name: 'shutdown', version: '1.0.0' });
  await client.connect(sdkTransports[wire](app, { Authorization: `Bearer ${token}` }));
  const outcome = client.callTool({ name: 'chat', arguments: { query, use_tools: false } }).then(
    (result) => ({ result }),
    (error: unknown) => ({ error: error as { code?: unknown; message: string } }),
  );
  // The turn is under way (the paced model writes a word every 20 ms) when the service begins to stop.
  await new Promise((resolve) => setTimeout(resolve, 150));
  const closed = app.close();
  const settled = await outcome;
  await closed;
  await client.close().catch(() => undefined);
  return settled;
}

describe('a tool call in flight at shutdown', () => {
  for (const wire of Object.keys(sdkTransports) as (keyof typeof sdkTransports)[]) {
    it(`${wire}: finishes within the drain and is answered before the connection closes`, async () => {
      const settled = await callDuringShutdown(wire, { SHUTDOWN_TIMEOUT_MS: '10000' }, words(30));
      expect(settled).toHaveProperty('result');
      const { result } = settled as { result: { isError?: boolean; content: { text: string }[] } };
      expect(result.isError).toBe(false);
      expect(result.content[0]!.text).toContain('a a a');
    });

    it(`${wire}: still running at the drain's deadline, is answered with the service stopping`, async () => {
      // 200 words at 20 ms each outlast a drain of 1 s, whose deadline comes at 800 ms.
      const settled = await callDuringShutdown(wire, { SHUTDOWN_TIMEOUT_MS: '1000' }, words(200));
      if ('error' in settled) {
        expect(settled.error.code).toBe(SERVICE_STOPPING);
      } else {
        const { result } = settled as { result: { isError?: boolean; content: { text: string }[] } };
        expect(result.isError).toBe(true);
        expect(result.content[0]!.text).toMatch(/stopping/i);
      }
    });
  }
});
