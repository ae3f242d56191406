import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowRuntime } from '../../workflows/runtime.js';
import { closeAfterEach } from '../helpers/app.js';
import { type Json, startTestClient } from '../helpers/client.js';
import { typeCheck } from '../helpers/typecheck.js';
import { type TestUpstream, startTestUpstream } from '../helpers/upstreams.js';

// Code generated for a workflow that calls a tool of a connected MCP server: the connection is registered with a
// bearer secret, and the code must reach the server by URL and token variables without ever holding the secret. The
// TypeScript is type-checked and run against the real upstream; the Python is compiled.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SECRET = `sk-connection-${randomBytes(12).toString('hex')}`;

const closing = closeAfterEach();
let upstream: TestUpstream;
const dir = path.join(ROOT, 'test', '.generated', randomBytes(6).toString('hex'));

beforeAll(async () => {
  upstream = await startTestUpstream({ requireBearer: SECRET });
  mkdirSync(dir, { recursive: true });
});
afterAll(async () => {
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** start → echo (a tool of the connected server `files`) → end. */
const echoFlow = (name: string) => ({
  name,
  nodes: [
    { id: 'start', type: 'start', data: {} },
    { id: 'echo', type: 'tool', data: { tool: 'files__echo', args: { text: '{{ input }}' } } },
    { id: 'end', type: 'end', data: {} },
  ],
  edges: [
    { id: 'e1', source: 'start', target: 'echo' },
    { id: 'e2', source: 'echo', target: 'end' },
  ],
});

interface EchoModule {
  buildWorkflow(runtime: WorkflowRuntime): { invoke(state: unknown): Promise<{ vars: Record<string, unknown> }> };
  initialState(input: string): unknown;
  connectMcpServers(
    runtime: WorkflowRuntime,
    options?: { env?: Record<string, string | undefined> },
  ): WorkflowRuntime & { close(): Promise<void> };
}

const noRuntime: WorkflowRuntime = {
  agent: () => Promise.reject(new Error('no agent here')),
  callTool: ({ tool }) => Promise.reject(new Error(`no tool ${tool} here`)),
};

describe('generated code for a workflow with a connected tool', () => {
  it('reaches the server by URL and token variables, holds no secret, and runs against the server', async () => {
    const client = closing(
      await startTestClient({ CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1,localhost', CONNECTIONS_TIMEOUT_MS: '5000' }),
    );
    const alice = await client.as('alice');
    const created = await alice.post('/api/v1/connections', {
      name: 'Files',
      slug: 'files',
      transport: 'streamable_http',
      url: upstream.url,
      auth: { kind: 'bearer', secret: SECRET },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await alice.post(`/api/v1/connections/${created.body.id as string}/test`)).body).toMatchObject({
      ok: true,
    });
    const builder = alice.at('builder');
    const listed = await builder.get<Json[]>('/api/builder/tools');
    expect(listed.body.find((t) => t.name === 'files__echo')).toMatchObject({
      server: { slug: 'files', transport: 'streamable_http', url: upstream.url },
    });

    const generate = async (language: 'typescript' | 'python') => {
      const res = await builder.post<{ filename: string; code: string }>('/api/builder/generate', {
        ...echoFlow('Echo flow'),
        options: { language },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };

    // TypeScript: the server's URL (not a secret) and the variables; never the secret.
    const ts = await generate('typescript');
    expect(ts.code).not.toContain(SECRET);
    expect(ts.code).toContain(`url: "${upstream.url}"`);
    expect(ts.code).toContain('urlEnv: "MCP_SERVER_FILES_URL"');
    expect(ts.code).toContain('tokenEnv: "MCP_SERVER_FILES_TOKEN"');
    expect(ts.code).toContain('tools: { files__echo: "echo" }');
    expect(ts.code).toContain('import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/');
    const file = path.join(dir, ts.filename);
    writeFileSync(file, ts.code);
    expect(typeCheck([file])).toEqual([]);

    // Run as a developer would: the token from the environment, the server reached where the service reached it.
    const generated = (await import(pathToFileURL(file).href)) as EchoModule;
    const runtime = generated.connectMcpServers(noRuntime, { env: { MCP_SERVER_FILES_TOKEN: SECRET } });
    try {
      const state = await generated.buildWorkflow(runtime).invoke(generated.initialState('from generated code'));
      expect(state.vars).toMatchObject({ echo: 'echo: from generated code', output: 'echo: from generated code' });
    } finally {
      await runtime.close();
    }
    // Without the token the server refuses it: the code holds no credential of its own.
    const anonymous = generated.connectMcpServers(noRuntime, { env: {} });
    try {
      await expect(generated.buildWorkflow(anonymous).invoke(generated.initialState('x'))).rejects.toThrow(
        /Could not connect to the MCP server Files/,
      );
    } finally {
      await anonymous.close();
    }

    // Python: the same, compiled by Python.
    const py = await generate('python');
    expect(py.code).not.toContain(SECRET);
    expect(py.code).toContain(`"url": "${upstream.url}"`);
    expect(py.code).toContain('"url_env": "MCP_SERVER_FILES_URL"');
    expect(py.code).toContain('"token_env": "MCP_SERVER_FILES_TOKEN"');
    expect(py.code).toContain('from mcp.client.streamable_http import streamablehttp_client');
    const pyFile = path.join(dir, py.filename);
    writeFileSync(pyFile, py.code);
    execFileSync('python3', ['-m', 'py_compile', pyFile]);
  }, 120_000);
});
