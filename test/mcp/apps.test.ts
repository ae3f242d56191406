import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { type FakeOpenAi, startFakeOpenAi } from '../fakes/openai.js';
import { askThenAnswer } from '../builder/helpers.js';
import { startTestApp } from '../helpers/app.js';
import { type SignedIn, signIn } from '../helpers/client.js';

/** What a host that renders MCP App views announces (SEP-1865). */
const APPS = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } };
const VIEW_ONLY = ['workflow_run_view', 'workflow_run_cancel'];

type Json = Record<string, unknown>;

describe('MCP Apps: views and the tools only views call', () => {
  let app: App;
  let fake: FakeOpenAi;
  let alice: SignedIn;
  let bob: SignedIn;
  let workflowId: string;
  let tool: string;
  const clients: Client[] = [];

  async function connect(user: SignedIn, capabilities: Json = {}): Promise<Client> {
    const client = new Client({ name: 'apps-test', version: '1.0.0' }, { capabilities });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url('main')}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${user.token}` } },
      }),
    );
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    // A FAKE OpenAI-compatible model: no hosted model can run here.
    fake = await startFakeOpenAi(['gpt-test']);
    app = await startTestApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'gpt-test' });
    alice = await signIn(app, 'alice');
    bob = await signIn(app, 'bob');
    const created = await alice.at('builder').post('/api/builder/workflows', askThenAnswer());
    workflowId = created.body.workflow_id as string;
    tool = (await alice.at('builder').post(`/api/builder/workflows/${workflowId}/publish`)).body.tool_name as string;
    // Bob may run alice's workflow too: runnable is not watchable.
    await app.infrastructure.authz.write([
      { user: `user:${bob.id}`, relation: 'executor', object: `workflow:${workflowId}` },
    ]);
  });

  afterAll(async () => {
    for (const client of clients) await client.close();
    await app?.close();
    await fake?.close();
  });

  it('offers views, their resource and the view-only tools to a host that renders views', async () => {
    const client = await connect(alice, APPS);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('workflow_run')?._meta).toEqual({ ui: { resourceUri: 'ui://agent-service/workflow-run.html' } });
    expect(byName.get(tool)?._meta).toEqual({
      ui: { resourceUri: 'ui://agent-service/workflow-run.html' },
      'agent-service/workflow_id': workflowId,
    });
    for (const name of VIEW_ONLY) expect(byName.get(name)?._meta).toEqual({ ui: { visibility: ['app'] } });
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain('ui://agent-service/workflow-run.html');
  });

  it('shows a client without the extension exactly what it saw before, and refuses the view-only tools', async () => {
    const client = await connect(alice);
    const { tools } = await client.listTools();
    for (const name of VIEW_ONLY) expect(tools.map((t) => t.name)).not.toContain(name);
    expect(tools.every((t) => t._meta === undefined)).toBe(true);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).not.toContain('ui://agent-service/workflow-run.html');
    const refused = await client.callTool({ name: 'workflow_run_view', arguments: { workflow_id: workflowId } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('not found');
  });

  it('never offers a view-only tool to a model', async () => {
    // The builder's list of what a workflow's model may call, and what the agent sends its model.
    const listed = await alice.at('builder').get<{ name: string }[]>('/api/builder/tools');
    expect(listed.status).toBe(200);
    const names = (listed.body as unknown as { name: string }[]).map((t) => t.name);
    expect(names.length).toBeGreaterThan(0);
    for (const name of VIEW_ONLY) expect(names).not.toContain(name);
    const client = await connect(alice, APPS);
    fake.replies.push({ text: 'Hello from the agent' });
    const chat = await client.callTool({ name: 'agent_chat', arguments: { message: 'hi' } });
    expect(chat.isError).toBe(false);
    const sent = fake.requests.at(-1)!.body as { tools?: { function: { name: string } }[] };
    const offered = (sent.tools ?? []).map((t) => t.function.name);
    expect(offered.length).toBeGreaterThan(0);
    for (const name of VIEW_ONLY) expect(offered).not.toContain(name);
    // The published workflows the caller may run are the agent's tools too (a workflow's own agents do not get them).
    expect(offered).toContain(tool);
    expect(names).not.toContain(tool);
  });

  it('lets the playground host the views: which tools have one, their calls as the caller, and the page', async () => {
    const playground = alice.at('playground');
    const listed = await playground.get<{ views: Json[] }>('/api/playground/views');
    expect(listed.status).toBe(200);
    expect(listed.body.views).toContainEqual({
      tool,
      title: 'Ask, then answer',
      resource_uri: 'ui://agent-service/workflow-run.html',
      workflow_id: workflowId,
      page: 'views/workflow-run.html',
    });
    // Only the tools views take part in; bad arguments are the caller's mistake.
    const other = await playground.post('/api/playground/views/tools/call', { name: 'search_web', arguments: {} });
    expect(other.status).toBe(404);
    const bad = await playground.post('/api/playground/views/tools/call', {
      name: 'workflow_run_view',
      arguments: { after: -1 },
    });
    expect(bad.status).toBe(400);
    const watched = await playground.post<Json>('/api/playground/views/tools/call', {
      name: 'workflow_run_view',
      arguments: { workflow_id: workflowId },
    });
    expect(watched.status).toBe(200);
    expect(watched.body.isError).toBe(false);

    const page = await fetch(`${app.url('playground')}/views/workflow-run.html`);
    expect(page.status).toBe(200);
    const policy = page.headers.get('content-security-policy') ?? '';
    expect(policy).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(policy).toContain("connect-src 'none'");
    expect(policy).toContain("frame-ancestors 'self'");
    expect(await page.text()).toContain('<div id="root">');
    expect((await fetch(`${app.url('playground')}/views/nothing.html`)).status).toBe(404);
  });

  it("lets a view watch its own caller's run, and nobody else's", async () => {
    const aliceClient = await connect(alice, APPS);
    const started = await aliceClient.callTool({ name: tool, arguments: { input: 'Hello' } });
    const run = started.structuredContent as { status: string; run_id: string };
    expect(run.status).toBe('waiting');

    const watched = await aliceClient.callTool({
      name: 'workflow_run_view',
      arguments: { workflow_id: workflowId, run_id: run.run_id },
    });
    const mine = watched.structuredContent as { run: Json; events: Json[]; graph: { nodes: Json[] } };
    expect(mine.run.status).toBe('waiting');
    expect(mine.events.map((e) => e.type)).toEqual(expect.arrayContaining(['run_started', 'interrupt', 'end']));
    // The graph's shape only: the prompts stay with those who may read the workflow.
    expect(JSON.stringify(mine.graph)).not.toContain('Repeat it.');
    // Without the run's id, the caller's newest run.
    const newest = await aliceClient.callTool({ name: 'workflow_run_view', arguments: { workflow_id: workflowId } });
    expect((newest.structuredContent as { run: Json }).run.run_id).toBe(run.run_id);

    const bobClient = await connect(bob, APPS);
    const named = await bobClient.callTool({
      name: 'workflow_run_view',
      arguments: { workflow_id: workflowId, run_id: run.run_id },
    });
    expect(named.isError).toBe(true);
    expect(JSON.stringify(named)).not.toContain('Hello');
    const guessed = await bobClient.callTool({ name: 'workflow_run_view', arguments: { workflow_id: workflowId } });
    expect((guessed.structuredContent as { run: unknown }).run).toBeNull();
    const stopped = await bobClient.callTool({
      name: 'workflow_run_cancel',
      arguments: { workflow_id: workflowId, run_id: run.run_id },
    });
    expect(stopped.isError).toBe(true);
    // Refused, and nothing changed: alice's run still waits for her answer.
    const after = await alice.at('builder').get<Json>(`/api/builder/workflows/${workflowId}/runs/${run.run_id}`);
    expect(after.body.status).toBe('waiting');

    // Alice stops her own run from the view.
    const own = await aliceClient.callTool({
      name: 'workflow_run_cancel',
      arguments: { workflow_id: workflowId, run_id: run.run_id },
    });
    expect(own.isError).toBe(false);
    expect((own.structuredContent as Json).status).toBe('cancelled');
  });

  it('keeps what a run showed, for the builder to reopen it', async () => {
    const client = await connect(alice, APPS);
    const started = await client.callTool({ name: tool, arguments: { input: 'Again' } });
    const runId = (started.structuredContent as Json).run_id as string;
    const events = await alice.at('builder').get(`/api/builder/workflows/${workflowId}/runs/${runId}/events`);
    expect(events.status).toBe(200);
    const list = events.body as unknown as { type: string; seq: number; at: string }[];
    expect(list.map((e) => e.type)).toEqual([
      'run_started',
      'node_started',
      'node_finished',
      'node_started',
      'interrupt',
      'end',
    ]);
    expect(list.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const theirs = await bob.at('builder').get(`/api/builder/workflows/${workflowId}/runs/${runId}/events`);
    expect(theirs.status).toBe(404);

    // Resumed, the run keeps the answer it went on with, numbered on after what it showed before.
    fake.replies.push({ text: 'You said blue' });
    const resumed = await client.callTool({
      name: 'workflow_resume',
      arguments: { workflow_id: workflowId, run_id: runId, answer: 'Blue' },
    });
    expect((resumed.structuredContent as Json).status).toBe('completed');
    const all = await alice.at('builder').get(`/api/builder/workflows/${workflowId}/runs/${runId}/events`);
    const more = (all.body as unknown as { type: string; seq: number; answer?: string }[]).slice(6);
    expect(more[0]).toMatchObject({ type: 'run_started', seq: 7 });
    expect(more[1]).toMatchObject({ type: 'answer', node_id: 'ask', answer: 'Blue', seq: 8 });
    expect(more.at(-1)).toMatchObject({ type: 'end', status: 'completed', output: 'You said blue' });
  });
});
