import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { closeAfterEach } from '../helpers/app.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import { type TestUpstream, startTestUpstream } from '../helpers/upstreams.js';

// A destructive upstream tool asks a person first, on every entry point: the agent (an approval the person gives
// through the API, then the same call runs once), and MCP clients in gateway mode (elicitation).

const closing = closeAfterEach();
let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startTestUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

async function setUp() {
  const client = closing(await startTestClient({ CONNECTIONS_PRIVATE_HOSTS: '127.0.0.1' }));
  const admin = await client.as('admin', { password: ADMIN_PASSWORD });
  const alice = await client.as('alice');
  const bob = await client.as('bob');
  const created = await admin.post('/api/v1/connections', {
    name: 'Shared upstream',
    slug: 'up',
    scope: 'shared',
    transport: 'streamable_http',
    url: upstream.url,
    gateway: true,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await upstream.control('reset');
  return { app: client.app, admin, alice, bob };
}

const deletions = async () => ((await upstream.control('calls')) as Record<string, number>).delete_item ?? 0;

/** The agent's answer to `/tool <name> {json}` on the REST chat endpoint. */
async function agentCall(user: SignedIn, name: string, args: Json): Promise<string> {
  const res = await user.post('/mcp/message', { query: `/tool ${name} ${JSON.stringify(args)}` });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.response);
}

describe('calls that ask a person first', () => {
  it('through the agent: requested, approved by the person who asked, then the same call runs once', async () => {
    const { alice, bob } = await setUp();
    const asked = await agentCall(alice, 'up__delete_item', { id: 'a1' });
    const approvalId = /Approval ([0-9a-f-]{36})/.exec(asked)?.[1];
    expect(approvalId, asked).toBeDefined();
    expect(await deletions()).toBe(0);

    const shown = await alice.get<Json>(`/api/v1/connections/approvals/${approvalId!}`);
    expect(shown.body).toMatchObject({ tool: 'up__delete_item', arguments: { id: 'a1' }, server: 'Shared upstream' });
    // Someone else can neither see nor decide it.
    expect((await bob.get(`/api/v1/connections/approvals/${approvalId!}`)).status).toBe(404);
    expect((await bob.post(`/api/v1/connections/approvals/${approvalId!}`, { approve: true })).status).toBe(404);
    expect(await deletions()).toBe(0);

    const decided = await alice.post<Json>(`/api/v1/connections/approvals/${approvalId!}`, { approve: true });
    expect(decided.body).toMatchObject({ approved: true });
    // Other arguments are another call: still asked.
    expect(await agentCall(alice, 'up__delete_item', { id: 'b2' })).toMatch(/must approve/);
    expect(await deletions()).toBe(0);
    expect(await agentCall(alice, 'up__delete_item', { id: 'a1' })).toContain('deleted a1');
    expect(await deletions()).toBe(1);
    // The approval is used up.
    expect(await agentCall(alice, 'up__delete_item', { id: 'a1' })).toMatch(/must approve/);
    expect(await deletions()).toBe(1);
  });

  it('declined, nothing runs', async () => {
    const { alice } = await setUp();
    const asked = await agentCall(alice, 'up__delete_item', { id: 'c3' });
    const approvalId = /Approval ([0-9a-f-]{36})/.exec(asked)![1]!;
    expect(
      (await alice.post<Json>(`/api/v1/connections/approvals/${approvalId}`, { approve: false })).body,
    ).toMatchObject({ approved: false });
    expect(await agentCall(alice, 'up__delete_item', { id: 'c3' })).toMatch(/must approve/);
    expect(await deletions()).toBe(0);
  });

  it('in a workflow: the tool node waits as a human node does, and runs the call on a yes only', async () => {
    const { alice } = await setUp();
    const builder = alice.at('builder');
    const created = await builder.post('/api/builder/workflows', {
      name: 'Delete one',
      nodes: [
        { id: 'start', type: 'start', position: { x: 0, y: 0 }, data: {} },
        {
          id: 'remove',
          type: 'tool',
          position: { x: 200, y: 0 },
          data: { label: 'Delete', tool: 'up__delete_item', args: { id: '{{ input }}' } },
        },
        { id: 'end', type: 'end', position: { x: 400, y: 0 }, data: {} },
      ],
      edges: [
        { id: 'e1', source: 'start', target: 'remove' },
        { id: 'e2', source: 'remove', target: 'end' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.workflow_id as string;
    const run = async (input: string) => {
      const waiting = await builder.post(`/api/builder/workflows/${id}/run`, { input });
      expect(waiting.body, JSON.stringify(waiting.body)).toMatchObject({ status: 'waiting', waiting_node: 'remove' });
      expect(String(waiting.body.question)).toContain('up__delete_item');
      return `/api/builder/workflows/${id}/runs/${waiting.body.run_id as string}`;
    };
    const first = await run('f6');
    expect(await deletions()).toBe(0);
    const done = await builder.post(`${first}/resume`, { answer: 'yes' });
    expect(done.body, JSON.stringify(done.body)).toMatchObject({ status: 'completed', error: null });
    expect(String(done.body.output)).toContain('deleted f6');
    expect(await deletions()).toBe(1);

    const second = await run('g7');
    const declined = await builder.post(`${second}/resume`, { answer: 'no' });
    expect(declined.body).toMatchObject({ status: 'failed' });
    expect(await deletions()).toBe(1);
  });

  it('over MCP (gateway): the client’s user is asked by elicitation, and only a yes runs it', async () => {
    const { app, alice } = await setUp();
    const answers: boolean[] = [true, false];
    const client = new Client({ name: 'approver', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(String(request.params.message));
      return Promise.resolve({ action: 'accept', content: { approve: answers.shift() ?? false } });
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
        requestInit: { headers: alice.credentials },
      }),
    );
    const yes = await client.callTool({ name: 'up__delete_item', arguments: { id: 'd4' } });
    expect(JSON.stringify(yes.content)).toContain('deleted d4');
    const no = await client.callTool({ name: 'up__delete_item', arguments: { id: 'e5' } });
    expect(no.isError).toBe(true);
    expect(asked).toHaveLength(2);
    expect(asked[0]).toContain('up__delete_item');
    expect(await deletions()).toBe(1);
    // A read-only tool is not asked about.
    await client.callTool({ name: 'up__echo', arguments: { text: 'x' } });
    expect(asked).toHaveLength(2);
    await client.close();
  });
});
