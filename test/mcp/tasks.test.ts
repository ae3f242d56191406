import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type RawClientDispatch,
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { askThenAnswer } from '../builder/helpers.js';
import { startFakeOpenAi } from '../fakes/openai.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, TestClock, accessToken, createUser } from '../helpers/auth.js';
import { type Json, requester, startTestClient } from '../helpers/client.js';
import {
  MODERN_REVISION,
  type RpcReply,
  TASKS_CAPABILITY,
  connectModernClient,
  postModern,
  sendModern,
} from '../helpers/mcp.js';

/**
 * What the 2026-07-28 revision adds for work that needs a person or takes long: a workflow's human question asked
 * in the reply (`input_required`) and answered on the retry, and the Tasks extension (a task to poll, answer and
 * cancel), kept in the database so that it outlives a restart.
 */
const closing = closeAfterEach();
const FORMS = { elicitation: { form: {} } };

/** Creates and publishes the ask-then-answer workflow as the user: its id and tool name. */
async function publishAskThenAnswer(app: App, token: string) {
  const builder = requester(app, { token }, 'builder');
  const created = await builder.post('/api/builder/workflows', askThenAnswer());
  expect(created.status).toBe(201);
  const id = created.body.workflow_id as string;
  const published = await builder.post(`/api/builder/workflows/${id}/publish`);
  expect(published.status).toBe(200);
  return { id, tool: published.body.tool_name as string, builder };
}

/** A client of the revision that puts every question to its "user", who answers with `reply`. */
async function askingClient(app: App, token: string, reply: (message: string) => Json) {
  const asked: string[] = [];
  const client = closing(await connectModernClient(app, token, { capabilities: FORMS }));
  client.setRequestHandler('elicitation/create', (request) => {
    const { message } = request.params as { message: string };
    asked.push(message);
    return Promise.resolve(reply(message) as never);
  });
  return { client, asked };
}

const task = (app: App, token: string, method: string, params: Json) =>
  postModern(app, token, method, params, TASKS_CAPABILITY);

/** Polls the task until its status is `status` (or the poll times out): the task as it then stands. */
async function until(app: App, token: string, taskId: string, status: string): Promise<Json> {
  let last: RpcReply | undefined;
  await expect
    .poll(
      async () => {
        last = await task(app, token, 'tasks/get', { taskId });
        return last.result?.status ?? last.error;
      },
      { timeout: 10_000, interval: 200 },
    )
    .toBe(status);
  return last!.result!;
}

describe('a workflow’s question over several round trips (input_required)', () => {
  it('asks the question in the reply, and the retry with the answer completes the run', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const { tool, id, builder } = await publishAskThenAnswer(app, alice.token);
    const { client, asked } = await askingClient(app, alice.token, () => ({
      action: 'accept',
      content: { answer: 'blue otters' },
    }));

    const result = await client.callTool({ name: tool, arguments: { input: 'Hello' } });
    expect(asked).toEqual(['What should I say?']);
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({
      workflow_id: id,
      status: 'completed',
      path: expect.any(Array) as unknown,
    });
    expect((result.structuredContent as { output: string }).output).toMatch(/you said "blue otters"/);
    const runs = await builder.get<Json[]>(`/api/builder/workflows/${id}/runs`);
    expect(runs.body).toEqual([expect.objectContaining({ status: 'completed' })]);

    // workflow_run, a tool of the service's own, asks the same way (its answer goes through the policy point).
    const direct = await client.callTool({ name: 'workflow_run', arguments: { workflow_id: id, input: 'Again' } });
    expect(asked).toHaveLength(2);
    expect(direct.structuredContent).toMatchObject({ status: 'completed' });
  });

  it('asks what a published workflow should start from when it is called without input', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const { tool, id } = await publishAskThenAnswer(app, alice.token);
    const replies = ['Start from here', 'blue otters'];
    const { client, asked } = await askingClient(app, alice.token, () => ({
      action: 'accept',
      content: { answer: replies.shift()! },
    }));
    const result = await client.callTool({ name: tool, arguments: {} });
    // First what to start from, then the human step's question: two round trips, one call.
    expect(asked).toEqual(['What should "Ask, then answer" start from?', 'What should I say?']);
    expect(result.structuredContent).toMatchObject({ workflow_id: id, status: 'completed' });
    const runs = await requester(app, { token: alice.token }, 'builder').get<Json[]>(
      `/api/builder/workflows/${id}/runs`,
    );
    expect(runs.body).toEqual([expect.objectContaining({ input: 'Start from here' })]);

    // Declined: nothing runs.
    const { client: declining } = await askingClient(app, alice.token, () => ({ action: 'decline' }));
    const declined = await declining.callTool({ name: tool, arguments: {} });
    expect(declined).toMatchObject({ isError: false, content: [{ text: 'Nothing was run: no input was given.' }] });
    expect(
      (await requester(app, { token: alice.token }, 'builder').get<Json[]>(`/api/builder/workflows/${id}/runs`)).body,
    ).toHaveLength(1);
  });

  it('stops the run when the user declines, and leaves it waiting for a client that cannot ask', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const { tool, id, builder } = await publishAskThenAnswer(app, alice.token);
    const { client } = await askingClient(app, alice.token, () => ({ action: 'decline' }));
    const declined = await client.callTool({ name: tool, arguments: { input: 'Hello' } });
    expect(declined.structuredContent).toMatchObject({ status: 'cancelled' });
    const run = await builder.get(
      `/api/builder/workflows/${id}/runs/${(declined.structuredContent as Json).run_id as string}`,
    );
    expect(run.body).toMatchObject({ status: 'cancelled', question: null });

    // Without the elicitation capability the run waits, for workflow_resume to answer, as on the 2025-era wires.
    const plain = await postModern(app, alice.token, 'tools/call', { name: tool, arguments: { input: 'Hi' } });
    expect(plain.result).toMatchObject({
      resultType: 'complete',
      isError: false,
      structuredContent: { status: 'waiting', question: 'What should I say?' },
    });
  });

  it('refuses a request state it did not seal for this caller', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const bob = await as('bob');
    const { tool } = await publishAskThenAnswer(app, alice.token);
    const first = await postModern(app, alice.token, 'tools/call', { name: tool, arguments: { input: 'Hi' } }, FORMS);
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const { inputRequests, requestState } = first.result as { inputRequests: Json; requestState: string };
    const [key] = Object.keys(inputRequests);
    expect(inputRequests[key!]).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', message: 'What should I say?', requestedSchema: { required: ['answer'] } },
    });
    const answer = { [key!]: { action: 'accept', content: { answer: 'mine' } } };

    // Another user replaying alice's state, and a forged state: the revision's invalid-state error, nothing run.
    const args = { name: tool, arguments: { input: 'Hi' }, inputResponses: answer };
    for (const [token, state] of [
      [bob.token, requestState],
      [alice.token, `${requestState.slice(0, -4)}AAAA`],
    ] as const) {
      const refused = await postModern(app, token, 'tools/call', { ...args, requestState: state }, FORMS);
      expect(refused.error).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
    }
    const answered = await postModern(app, alice.token, 'tools/call', { ...args, requestState }, FORMS);
    expect(answered.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'completed' } });
  });
});

describe('tasks (the Tasks extension)', () => {
  it('runs a workflow as a task: a question, a restart, the answer, the result; and another task cancelled', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-tasks-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'agent.db')}`, ADMIN_PASSWORD };
    let app = await startTestApp(env);
    await createUser(app, 'alice');
    let token = await accessToken(app, 'alice');
    const { tool, id } = await publishAskThenAnswer(app, token);

    const discovered = await task(app, token, 'server/discover', {});
    expect(discovered.result).toMatchObject({ capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });

    const created = await task(app, token, 'tools/call', { name: tool, arguments: { input: 'Hello' } });
    expect(created.result).toMatchObject({
      resultType: 'task',
      taskId: expect.any(String) as unknown,
      status: 'working',
      ttlMs: 86_400_000,
      pollIntervalMs: expect.any(Number) as unknown,
    });
    const taskId = created.result!.taskId as string;
    const waiting = await until(app, token, taskId, 'input_required');
    expect(waiting).toMatchObject({ resultType: 'complete', statusMessage: 'What should I say?' });
    const [key] = Object.keys(waiting.inputRequests as Json);
    await app.close();

    // A new process on the same database: the task still waits, with the same question.
    app = closing(await startTestApp(env));
    token = await accessToken(app, 'alice');
    const after = await task(app, token, 'tasks/get', { taskId });
    expect(after.result).toMatchObject({ status: 'input_required', inputRequests: waiting.inputRequests });

    const ack = await task(app, token, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { answer: 'blue otters' } } },
    });
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    const done = await until(app, token, taskId, 'completed');
    expect(done.result).toMatchObject({ isError: false, structuredContent: { workflow_id: id, status: 'completed' } });
    expect(((done.result as Json).structuredContent as Json).output).toMatch(/you said "blue otters"/);
    // Answering again changes nothing: the question is no longer asked.
    await task(app, token, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { answer: 'x' } } },
    });
    expect((await task(app, token, 'tasks/get', { taskId })).result).toMatchObject({ status: 'completed' });

    const second = await task(app, token, 'tools/call', { name: tool, arguments: { input: 'Hello' } });
    const secondId = second.result!.taskId as string;
    await until(app, token, secondId, 'input_required');
    expect((await task(app, token, 'tasks/cancel', { taskId: secondId })).result).toMatchObject({
      resultType: 'complete',
    });
    const cancelled = await task(app, token, 'tasks/get', { taskId: secondId });
    expect(cancelled.result).toMatchObject({ status: 'cancelled' });
    expect(cancelled.result).not.toHaveProperty('inputRequests');
    // Its run is stopped too: it can no longer be resumed.
    const runs = await requester(app, { token }, 'builder').get<Json[]>(`/api/builder/workflows/${id}/runs`);
    expect(runs.body.map((run) => run.status).sort()).toEqual(['cancelled', 'completed']);
  });

  it('is driven through its question to its result by the official Tasks client', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const { tool } = await publishAskThenAnswer(app, alice.token);
    const client = closing(await connectModernClient(app, alice.token));

    // The package frames the revision's task requests itself; they travel over plain HTTP.
    let id = 0;
    const rawDispatch: RawClientDispatch = async (request) => {
      const message = { jsonrpc: '2.0', id: ++id, ...(request as { method: string; params?: Json }) };
      const reply = await sendModern(app, alice.token, message);
      return reply.error
        ? { kind: 'error', error: reply.error as never }
        : { kind: 'result', result: reply.result as never };
    };
    const asked: string[] = [];
    const session = createTaskSessionFromClient(client, {
      endpointId: 'agent-service-tasks-test',
      rawDispatch,
      v2RequestFraming: {
        protocolVersion: MODERN_REVISION,
        clientInfo: { name: 'tasks', version: '1.0.0' },
        clientCapabilities: { elicitation: { form: {} } },
      },
      onInputRequest: (request) => {
        asked.push((request.params as { message: string }).message);
        return Promise.resolve({ action: 'accept', content: { answer: 'blue otters' } } as never);
      },
    });
    try {
      const execution = await session.callTool(tool, { input: 'Hello' });
      expect(execution.kind).toBe('task');
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as unknown as {
        isError: boolean;
        structuredContent: { output: string };
      };
      expect(asked).toEqual(['What should I say?']);
      expect(result.isError).toBe(false);
      expect(result.structuredContent.output).toMatch(/you said "blue otters"/);
    } finally {
      await session.close();
    }
  });

  it('fails with the reason when its run was answered elsewhere meanwhile', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const { tool, id, builder } = await publishAskThenAnswer(app, alice.token);
    const created = await task(app, alice.token, 'tools/call', { name: tool, arguments: { input: 'Hello' } });
    const taskId = created.result!.taskId as string;
    const waiting = await until(app, alice.token, taskId, 'input_required');
    const [run] = (await builder.get<Json[]>(`/api/builder/workflows/${id}/runs`)).body;
    // Answered in the builder instead: the task's question is no longer the run's.
    const direct = await builder.post(`/api/builder/workflows/${id}/runs/${run!.run_id as string}/resume`, {
      answer: 'from the builder',
    });
    expect(direct.status).toBe(200);
    const [key] = Object.keys(waiting.inputRequests as Json);
    await task(app, alice.token, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { answer: 'too late' } } },
    });
    const failed = await until(app, alice.token, taskId, 'failed');
    expect(failed.error).toEqual({ code: -32603, message: 'The run is completed, not waiting for an answer' });
  });

  it('answers malformed task requests with -32602 and changes nothing', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const { tool } = await publishAskThenAnswer(app, alice.token);
    const created = await task(app, alice.token, 'tools/call', { name: tool, arguments: { input: 'Hello' } });
    const taskId = created.result!.taskId as string;
    const waiting = await until(app, alice.token, taskId, 'input_required');
    const [key] = Object.keys(waiting.inputRequests as Json);
    const malformed: Json[] = [
      { taskId: 'x'.repeat(65) },
      { taskId: 42 },
      {},
      { taskId, inputResponses: { [key!]: { action: 'accept', content: { answer: 7 } } } },
      { taskId, inputResponses: { [key!]: { action: 'accept', content: { answer: 'x'.repeat(20_001) } } } },
    ];
    for (const params of malformed) {
      const reply = await task(app, alice.token, 'tasks/update', params);
      expect(reply.status, JSON.stringify(params).slice(0, 80)).toBe(200);
      expect(reply.error?.code, JSON.stringify(params).slice(0, 80)).toBe(-32602);
    }
    // A response to a question the task does not ask is ignored, as the extension says; so is one that is not a
    // response at all (the SDK drops it before the task sees it).
    for (const inputResponses of [{ 'not-asked': { action: 'accept', content: { answer: 'x' } } }, { [key!]: 'yes' }]) {
      const stray = await task(app, alice.token, 'tasks/update', { taskId, inputResponses });
      expect(stray.result).toMatchObject({ resultType: 'complete' });
    }
    expect((await task(app, alice.token, 'tasks/get', { taskId })).result).toMatchObject({
      status: 'input_required',
      inputRequests: waiting.inputRequests,
    });
  });

  it('belongs to its caller: to anyone else it does not exist', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const bob = await as('bob');
    const created = await task(app, alice.token, 'tools/call', { name: 'agent_chat', arguments: { message: 'Hi' } });
    const taskId = created.result!.taskId as string;
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const reply = await task(app, bob.token, method, { taskId, inputResponses: {} });
      expect(reply.error).toMatchObject({ code: -32602, message: 'Task not found' });
    }
    const done = await until(app, alice.token, taskId, 'completed');
    expect(done.result).toMatchObject({
      isError: false,
      structuredContent: { response: expect.any(String) as unknown },
    });
    const unknown = await task(app, alice.token, 'tasks/get', { taskId: 'no-such-task' });
    expect(unknown.error).toMatchObject({ code: -32602 });

    // Without the extension in its capabilities, a client waits for the result as before.
    const plain = await postModern(app, alice.token, 'tools/call', {
      name: 'agent_chat',
      arguments: { message: 'Hi' },
    });
    expect(plain.result).toMatchObject({ resultType: 'complete', isError: false });
  });

  it('is not started for a call the policy point refuses: the refusal is the answer', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const bob = await as('bob');
    const { tool } = await publishAskThenAnswer(app, alice.token);
    await app.infrastructure.authz.delete([{ user: 'user:*', relation: 'executor', object: 'tool:agent_chat' }]);
    const denied = await task(app, alice.token, 'tools/call', { name: 'agent_chat', arguments: { message: 'Hi' } });
    expect(denied.result).toMatchObject({ resultType: 'complete', isError: true });
    // Bob may not run alice's workflow: for him its tool does not exist, with or without a task.
    const hidden = await task(app, bob.token, 'tools/call', { name: tool, arguments: { input: 'Hi' } });
    expect(hidden.result).toMatchObject({ resultType: 'complete', isError: true });
    expect(JSON.stringify(hidden.result)).toContain(`Tool ${tool} not found`);
    expect(await app.infrastructure.db.kysely.selectFrom('mcp_tasks').selectAll().execute()).toEqual([]);
  });

  it('stops the model when a working task is cancelled', async () => {
    const fake = closing(await startFakeOpenAi(['gpt-fake']));
    fake.chunkDelayMs = 200;
    fake.replies.push({ text: 'a long answer that streams slowly, word by word, for a good while' });
    const { app, as } = closing(
      await startTestClient({
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: fake.url,
        LLM_MODEL: 'gpt-fake',
        LLM_API_KEY: 'sk-fake',
      }),
    );
    const alice = await as('alice');
    const created = await task(app, alice.token, 'tools/call', { name: 'agent_chat', arguments: { message: 'Go' } });
    const taskId = created.result!.taskId as string;
    // Cancelled once the model is answering (before, there would be no model call to stop).
    await expect
      .poll(() => fake.requests.filter((r) => r.path === '/v1/chat/completions').length, { timeout: 5_000 })
      .toBe(1);
    expect((await task(app, alice.token, 'tasks/cancel', { taskId })).result).toBeDefined();
    await expect.poll(() => fake.abandoned, { timeout: 5_000 }).toBe(1);
    expect((await task(app, alice.token, 'tasks/get', { taskId })).result).toMatchObject({
      status: 'cancelled',
      statusMessage: 'Cancelled by the client',
    });
  });

  it('expires MCP_TASK_TTL_SECONDS after it started: gone for its owner, then from the database', async () => {
    const clock = new TestClock();
    const { app, as } = closing(await startTestClient({ MCP_TASK_TTL_SECONDS: '60' }, { now: clock.now }));
    const alice = await as('alice');
    const created = await task(app, alice.token, 'tools/call', { name: 'agent_chat', arguments: { message: 'Hi' } });
    expect(created.result).toMatchObject({ ttlMs: 60_000 });
    const taskId = created.result!.taskId as string;
    await until(app, alice.token, taskId, 'completed');
    clock.advance(59_000);
    expect((await task(app, alice.token, 'tasks/get', { taskId })).result).toMatchObject({ status: 'completed' });
    clock.advance(1_000);
    expect((await task(app, alice.token, 'tasks/get', { taskId })).error).toMatchObject({ message: 'Task not found' });
    expect((await alice.get('/api/v1/users/me/export')).body.mcp_tasks).toEqual([]);
    expect(await app.services.mcp.tasks.prune()).toBe(1);
    expect(await app.infrastructure.db.kysely.selectFrom('mcp_tasks').selectAll().execute()).toEqual([]);
  });

  it('is failed once the claim of the instance running it lapses (a crash), and bounds unfinished tasks at 20', async () => {
    const fake = closing(await startFakeOpenAi(['gpt-fake']));
    fake.chunkDelayMs = 200;
    fake.replies.push({ text: 'a long answer that streams slowly, word by word, for a good while' });
    const clock = new TestClock();
    const { app, as } = closing(
      await startTestClient(
        { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'gpt-fake', LLM_API_KEY: 'sk-fake' },
        { now: clock.now },
      ),
    );
    const alice = await as('alice');
    const created = await task(app, alice.token, 'tools/call', { name: 'agent_chat', arguments: { message: 'Go' } });
    const taskId = created.result!.taskId as string;
    // Nobody renews the claim for 30 s: as if the instance had crashed, the task is lost.
    clock.advance(30_001);
    const lost = await task(app, alice.token, 'tasks/get', { taskId });
    expect(lost.result).toMatchObject({
      status: 'failed',
      error: { code: -32603, message: 'The task stopped: the instance running it went away before it finished' },
    });

    const bob = await as('bob');
    const { tool } = await publishAskThenAnswer(app, bob.token);
    for (let i = 0; i < 20; i++) {
      const started = await task(app, bob.token, 'tools/call', { name: tool, arguments: { input: `run ${i}` } });
      expect(started.result, `task ${i}`).toMatchObject({ resultType: 'task' });
    }
    const refused = await task(app, bob.token, 'tools/call', { name: tool, arguments: { input: 'one more' } });
    // A tool error, as tool failures are on MCP: the call started nothing.
    expect(refused.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      content: [{ text: 'You have 20 unfinished tasks: wait for one to finish, or cancel one' }],
    });
  });

  it('is in the owner’s data export, and erased with them', async () => {
    const { app, as } = closing(await startTestClient());
    const alice = await as('alice');
    const created = await task(app, alice.token, 'tools/call', { name: 'agent_chat', arguments: { message: 'Hi' } });
    const taskId = created.result!.taskId as string;
    await until(app, alice.token, taskId, 'completed');
    const exported = await alice.get('/api/v1/users/me/export');
    expect(exported.body.mcp_tasks).toEqual([
      expect.objectContaining({
        task_id: taskId,
        tool: 'agent_chat',
        status: 'completed',
        result: expect.any(Object) as unknown,
      }),
    ]);
    const erased = await alice.delete('/api/v1/users/me?confirm=true');
    expect(erased.body).toMatchObject({ deleted_items: { mcp_tasks: 1 } });
    const left = await app.infrastructure.db.kysely.selectFrom('mcp_tasks').selectAll().execute();
    expect(left).toEqual([]);
  });
});
