import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../fakes/openai.js';
import { closeAfterEach } from '../helpers/app.js';
import { type SignedIn, startTestClient } from '../helpers/client.js';
import { sdkTransports } from '../helpers/mcp.js';
import { createPostgresDatabase, describeWithService, probePostgres } from '../helpers/services.js';
import { type Json, linear, reviewedResearch, streamFrom } from './helpers.js';

// The model is the service's offline model: deterministic, and it calls search_web when asked to "search for" something.

const closing = closeAfterEach();

async function setUp(env: Record<string, string> = {}) {
  const client = closing(await startTestClient(env));
  const alice = await client.as('alice');
  return { client, app: client.app, alice, builder: alice.at('builder') };
}

async function createWorkflow(user: SignedIn, body: Json) {
  const res = await user.at('builder').post('/api/builder/workflows', body);
  expect(res.status).toBe(201);
  return res.body.workflow_id as string;
}

/** Node ids in the order their node_started events came. */
const started = (events: { event: string; data: Json }[]) =>
  events.filter((e) => e.event === 'node_started').map((e) => e.data.node_id);

describe('running a workflow', () => {
  it('runs to the end and answers the run as JSON without a stream', async () => {
    const { builder, alice } = await setUp();
    const id = await createWorkflow(alice, linear());
    const res = await builder.post(`/api/builder/workflows/${id}/run`, { input: 'Hello there' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      workflow_id: id,
      version: 1,
      status: 'completed',
      input: 'Hello there',
      path: ['start', 'answer', 'end'],
      question: null,
      error: null,
    });
    expect(res.body.output).toMatch(/^Offline model: .*Hello there/);
  });

  it('streams nodes, tokens and tool calls, pauses at the human node, loops on "again" and ends on "ok"', async () => {
    const { app, alice, builder } = await setUp();
    const id = await createWorkflow(alice, reviewedResearch());
    const base = `/api/builder/workflows/${id}`;

    const first = await streamFrom(app, alice, `${base}/run`, { input: 'please search for otters' });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = first.events;
    expect(events[0]).toMatchObject({ event: 'run_started', data: { workflow_id: id, version: 1 } });
    const runId = events[0]!.data.run_id as string;
    expect(started(events)).toEqual(['start', 'research', 'needs_search', 'lookup', 'review']);

    // The agent node called search_web itself (the offline model asks for it), then answered token by token.
    const research = events.filter((e) => e.data.node_id === 'research');
    expect(research.map((e) => e.event)).toEqual(
      expect.arrayContaining(['node_started', 'tool_call', 'tool_result', 'token', 'node_finished']),
    );
    expect(research.find((e) => e.event === 'tool_call')!.data).toMatchObject({
      name: 'search_web',
      args: { query: 'otters' },
    });
    // The tool node filled its arguments from the run state.
    expect(events.find((e) => e.event === 'tool_call' && e.data.node_id === 'lookup')!.data).toEqual({
      node_id: 'lookup',
      name: 'conversation_search',
      args: { query: 'please search for otters', limit: 3 },
    });
    expect(events.at(-2)).toEqual({
      event: 'interrupt',
      data: { run_id: runId, node_id: 'review', question: 'Is this good?' },
    });
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'waiting', output: null } });

    const waiting = await builder.get(`${base}/runs/${runId}`);
    expect(waiting.body).toMatchObject({
      status: 'waiting',
      question: 'Is this good?',
      waiting_node: 'review',
      path: ['start', 'research', 'needs_search', 'lookup'],
    });

    const again = await streamFrom(app, alice, `${base}/runs/${runId}/resume`, { answer: 'again' });
    expect(started(again.events)).toEqual(['review', 'decide', 'research', 'needs_search', 'lookup', 'review']);
    expect(again.events.at(-1)).toMatchObject({ event: 'end', data: { status: 'waiting' } });

    const done = await streamFrom(app, alice, `${base}/runs/${runId}/resume`, { answer: 'ok' });
    expect(started(done.events)).toEqual(['review', 'decide', 'end']);
    const end = done.events.at(-1)!;
    expect(end).toMatchObject({ event: 'end', data: { run_id: runId, status: 'completed' } });
    expect(end.data.path).toEqual([
      'start',
      'research',
      'needs_search',
      'lookup',
      'review',
      'decide',
      'research',
      'needs_search',
      'lookup',
      'review',
      'decide',
      'end',
    ]);
    // The run's output is the last result a step produced: the tool node's, here.
    expect(typeof end.data.output).toBe('string');

    const runs = await builder.get<Json[]>(`${base}/runs`);
    expect(runs.body).toEqual([expect.objectContaining({ run_id: runId, status: 'completed', path: end.data.path })]);
  });

  it("asks for the model an agent node names, with the node's system prompt (model: a fake OpenAI-compatible API)", async () => {
    const fake = closing(await startFakeOpenAi(['main-model', 'other-model']));
    const { builder, alice } = await setUp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'main-model' });
    const workflow = linear();
    (workflow.nodes[1]!.data as Json).model = 'other-model';
    const id = await createWorkflow(alice, workflow);
    const run = await builder.post(`/api/builder/workflows/${id}/run`, { input: 'Hello' });
    expect(run.body).toMatchObject({ status: 'completed' });
    const completions = fake.requests.filter((r) => r.path === '/v1/chat/completions');
    expect(completions).toHaveLength(1);
    expect(completions[0]!.body).toMatchObject({
      model: 'other-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
    });
  });

  it('stops the model when the client leaves the stream, and marks the run cancelled (model: a fake OpenAI-compatible API)', async () => {
    const fake = closing(await startFakeOpenAi(['slow-model']));
    // A long answer, one slow chunk at a time: the client leaves long before it ends.
    fake.replies.push({ text: 'word '.repeat(500) });
    fake.chunkDelayMs = 20;
    const { app, alice, builder } = await setUp({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'slow-model',
    });
    const id = await createWorkflow(alice, linear());
    const controller = new AbortController();
    const res = await fetch(`${app.url('builder')}/api/builder/workflows/${id}/run`, {
      method: 'POST',
      headers: { ...alice.credentials, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ input: 'tell me a long story' }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('event: token')) seen += new TextDecoder().decode((await reader.read()).value as Uint8Array);
    const runId = /"run_id":"([^"]+)"/.exec(seen)![1]!;
    controller.abort();

    let run: Json = {};
    for (let i = 0; i < 200 && run.status !== 'cancelled'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      run = (await builder.get(`/api/builder/workflows/${id}/runs/${runId}`)).body;
    }
    expect(run).toMatchObject({ status: 'cancelled', error: 'The run was stopped', path: ['start'] });
    // The model's stream was cut off, not left to run to its end.
    for (let i = 0; i < 200 && fake.abandoned === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(fake.abandoned).toBe(1);
  });

  it('takes the default branch when no condition holds', async () => {
    const { app, alice } = await setUp();
    const id = await createWorkflow(alice, reviewedResearch());
    const run = await streamFrom(app, alice, `/api/builder/workflows/${id}/run`, { input: 'just answer' });
    expect(started(run.events)).toEqual(['start', 'research', 'needs_search', 'review']);
  });

  it('refuses to resume a run that is not waiting (409) or does not exist (404), and checks the body', async () => {
    const { alice, builder } = await setUp();
    const id = await createWorkflow(alice, linear());
    const run = await builder.post(`/api/builder/workflows/${id}/run`, { input: 'x' });
    const runId = run.body.run_id as string;
    const resumed = await builder.post(`/api/builder/workflows/${id}/runs/${runId}/resume`, { answer: 'x' });
    expect(resumed.status).toBe(409);
    expect(resumed.body).toMatchObject({ error: 'conflict', code: 'WORKFLOW_RUN_NOT_WAITING', status: 'completed' });
    expect((await builder.post(`/api/builder/workflows/${id}/runs/nope/resume`, { answer: 'x' })).status).toBe(404);
    expect((await builder.post(`/api/builder/workflows/${id}/runs/${runId}/resume`, {})).status).toBe(400);
    expect((await builder.post(`/api/builder/workflows/${id}/run`, { input: 42 })).status).toBe(400);
  });

  it('answers a resume race once: the second resume of the same pause is a 409', async () => {
    const { app, alice } = await setUp();
    const id = await createWorkflow(alice, reviewedResearch());
    const first = await streamFrom(app, alice, `/api/builder/workflows/${id}/run`, { input: 'hi' });
    const runId = first.events[0]!.data.run_id as string;
    const path = `/api/builder/workflows/${id}/runs/${runId}/resume`;
    const results = await Promise.all([
      alice.at('builder').post(path, { answer: 'ok' }),
      alice.at('builder').post(path, { answer: 'ok' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  });
});

describe('a paused run survives a restart (SQLite file)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'builder-restart-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('resumes from the stored checkpoint in a new process of the service', async () => {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'agent.db')}` };
    const before = await setUp(env);
    const id = await createWorkflow(before.alice, reviewedResearch());
    const paused = await streamFrom(before.app, before.alice, `/api/builder/workflows/${id}/run`, { input: 'hi' });
    const runId = paused.events[0]!.data.run_id as string;
    expect(paused.events.at(-1)).toMatchObject({ data: { status: 'waiting' } });
    const { tool_name: toolName } = (await before.builder.post(`/api/builder/workflows/${id}/publish`)).body;
    await before.client.close();

    const after = await setUp(env);
    // Still published after the restart.
    const tools = (await after.alice.get<{ tools: Json[] }>('/tools')).body.tools;
    expect(tools.map((t) => t.name)).toContain(toolName);
    const done = await streamFrom(after.app, after.alice, `/api/builder/workflows/${id}/runs/${runId}/resume`, {
      answer: 'ok',
    });
    // It goes on at the human node: nothing before it runs again.
    expect(started(done.events)).toEqual(['review', 'decide', 'end']);
    expect(done.events.at(-1)!.data).toMatchObject({
      status: 'completed',
      path: ['start', 'research', 'needs_search', 'review', 'decide', 'end'],
    });
  });
});

describeWithService('a paused run resumes on another instance (PostgreSQL)', await probePostgres(), () => {
  let database: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    database = await createPostgresDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('pauses on one instance and ends on a second one that shares the database', async () => {
    const env = { DATABASE_URL: database.url };
    const one = await setUp(env);
    const two = await setUp(env);
    const id = await createWorkflow(one.alice, reviewedResearch());
    const paused = await streamFrom(one.app, one.alice, `/api/builder/workflows/${id}/run`, { input: 'search for x' });
    const runId = paused.events[0]!.data.run_id as string;
    expect(paused.events.at(-1)).toMatchObject({ data: { status: 'waiting' } });

    const bob = await two.client.as('bob');
    const done = await streamFrom(two.app, two.alice, `/api/builder/workflows/${id}/runs/${runId}/resume`, {
      answer: 'ok',
    });
    expect(started(done.events)).toEqual(['review', 'decide', 'end']);
    expect(done.events.at(-1)!.data).toMatchObject({
      status: 'completed',
      path: ['start', 'research', 'needs_search', 'lookup', 'review', 'decide', 'end'],
    });
    // Another user of that instance still sees nothing of it.
    expect((await bob.at('builder').get(`/api/builder/workflows/${id}/runs/${runId}`)).status).toBe(404);
  });
});

describe("the builder's share of the user's data", () => {
  it('exports the user’s workflows and erases them with their runs', async () => {
    const { alice, client } = await setUp();
    const id = await createWorkflow(alice, reviewedResearch());
    await alice.at('builder').put(`/api/builder/workflows/${id}`, linear('Second'));
    await alice.at('builder').post(`/api/builder/workflows/${id}/run`, { input: 'hi' });

    const exported = await alice.get('/api/v1/users/me/data');
    expect(exported.status).toBe(200);
    expect(exported.body.workflows).toEqual([
      expect.objectContaining({ workflow_id: id, name: 'Second', version: 2, version_count: 2 }),
    ]);

    const erased = await alice.delete('/api/v1/users/me?confirm=true');
    expect(erased.status).toBe(200);
    const db = client.app.infrastructure.db.kysely;
    for (const table of ['workflows', 'workflow_versions', 'workflow_runs', 'workflow_tags'] as const)
      expect(await db.selectFrom(table).selectAll().execute(), table).toEqual([]);
    const tuples = await db.selectFrom('relation_tuples').selectAll().where('object_type', '=', 'workflow').execute();
    expect(tuples).toEqual([]);
  });
});

describe('workflows as MCP tools', () => {
  it('offers a published workflow as a tool of its own, to those who may run it, from the moment it is published', async () => {
    const { app, alice, client } = await setUp();
    const bob = await client.as('bob');
    const id = await createWorkflow(alice, linear('Say hello'));
    const sdk = new Client({ name: 'builder-test', version: '1.0.0' });
    const bobs = new Client({ name: 'builder-test', version: '1.0.0' });
    await sdk.connect(sdkTransports['streamable HTTP'](app, alice.credentials));
    await bobs.connect(sdkTransports['streamable HTTP'](app, bob.credentials));
    try {
      const before = (await sdk.listTools()).tools.map((t) => t.name);
      const published = await alice.at('builder').post(`/api/builder/workflows/${id}/publish`);
      expect(published.status).toBe(200);
      const toolName = published.body.tool_name as string;
      expect(toolName).toMatch(/^workflow_say_hello_[0-9a-f]{8}$/);
      expect((await alice.at('builder').get(`/api/builder/workflows/${id}`)).body).toMatchObject({
        published: true,
        tool_name: toolName,
      });

      // The connection opened before the publish offers it now.
      const listed = (await sdk.listTools()).tools;
      expect(listed.map((t) => t.name)).toEqual([...before, toolName]);
      expect(listed.at(-1)).toMatchObject({ title: 'Say hello', inputSchema: { properties: { input: {} } } });
      const result = await sdk.callTool({ name: toolName, arguments: { input: 'Hello' } });
      expect(result.isError).toBe(false);
      expect(result.structuredContent).toMatchObject({ status: 'completed', path: ['start', 'answer', 'end'] });
      expect((result.content as { text: string }[])[0]!.text).toMatch(/^Offline model: .*Hello/);

      // Bob may not run it: he does not see it, and calling it is as for a tool that does not exist.
      expect((await bobs.listTools()).tools.map((t) => t.name)).not.toContain(toolName);
      const refused = await bobs.callTool({ name: toolName, arguments: { input: 'x' } });
      expect(refused.isError).toBe(true);
      expect((refused.content as { text: string }[])[0]!.text).toBe(`Tool ${toolName} not found`);
      expect((await alice.at('builder').get<Json[]>(`/api/builder/workflows/${id}/runs`)).body).toHaveLength(1);

      expect((await alice.at('builder').delete(`/api/builder/workflows/${id}/publish`)).status).toBe(204);
      expect((await sdk.listTools()).tools.map((t) => t.name)).toEqual(before);
      const gone = await sdk.callTool({ name: toolName, arguments: { input: 'x' } });
      expect(gone.isError).toBe(true);
      expect((await bob.at('builder').post(`/api/builder/workflows/${id}/publish`)).status).toBe(404);
    } finally {
      await Promise.all([sdk.close(), bobs.close()]);
    }
  });

  it('runs a workflow through workflow_run and answers its question through workflow_resume (SDK client)', async () => {
    const { app, alice } = await setUp();
    const id = await createWorkflow(alice, reviewedResearch());
    const client = new Client({ name: 'builder-test', version: '1.0.0' });
    await client.connect(sdkTransports['streamable HTTP'](app, alice.credentials));
    try {
      const paused = await client.callTool({ name: 'workflow_run', arguments: { workflow_id: id, input: 'hello' } });
      expect(paused.isError).toBe(false);
      const run = paused.structuredContent as Json;
      expect(run).toMatchObject({ status: 'waiting', waiting_node: 'review', question: 'Is this good?' });
      expect((paused.content as { text: string }[])[0]!.text).toContain(`run_id ${run.run_id as string}`);

      const done = await client.callTool({
        name: 'workflow_resume',
        arguments: { workflow_id: id, run_id: run.run_id, answer: 'ok' },
      });
      expect(done.isError).toBe(false);
      expect(done.structuredContent).toMatchObject({ status: 'completed', run_id: run.run_id });
      expect((done.content as { text: string }[])[0]!.text).toBe((done.structuredContent as Json).output);

      // Someone else's workflow, or none: a tool error that says so, and no run.
      const missing = await client.callTool({ name: 'workflow_run', arguments: { workflow_id: 'nope', input: '' } });
      expect(missing.isError).toBe(true);
      expect((missing.content as { text: string }[])[0]!.text).toMatch(/not found/);
    } finally {
      await client.close();
    }
  });
});
