import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { Caller } from '../../src/ports/caller.js';
import { closeAfterEach } from '../helpers/app.js';
import { type Json, type SignedIn, startTestClient } from '../helpers/client.js';
import { TASKS_CAPABILITY, connectModernClient, postModern, sdkTransports } from '../helpers/mcp.js';
import { askThenAnswer, reviewedResearch, streamFrom } from './helpers.js';

/**
 * What a human step takes as its answer, on every way in: any text of at most 20,000 characters, the empty text
 * included. Anything else is refused before the run changes, and the run still waits for a good answer. A run is
 * never lost to an answer: when it cannot go on with one, it still waits at its human step, as it did.
 */
const closing = closeAfterEach();

async function setUp() {
  const client = closing(await startTestClient());
  const alice = await client.as('alice');
  return { app: client.app, alice, builder: alice.at('builder') };
}

/** Creates the workflow and runs it to its human step: the waiting run as the builder shows it. */
async function waitingRun(alice: SignedIn, definition: Json) {
  const created = await alice.at('builder').post('/api/builder/workflows', definition);
  expect(created.status).toBe(201);
  const id = created.body.workflow_id as string;
  const run = await alice.at('builder').post(`/api/builder/workflows/${id}/run`, { input: 'search for otters' });
  expect(run.body).toMatchObject({ status: 'waiting' });
  const base = `/api/builder/workflows/${id}/runs/${run.body.run_id as string}`;
  return { id, runId: run.body.run_id as string, base, waiting: run.body };
}

/** The run as the builder shows it now. */
const readRun = async (alice: SignedIn, base: string) => (await alice.at('builder').get(base)).body;

/** What a waiting run shows, which a refused answer must leave as it was. */
const asWaiting = (run: Json) => ({
  status: 'waiting',
  question: run.question,
  waiting_node: run.waiting_node,
  path: run.path,
  error: null,
});

describe('answers to a human step (REST resume)', () => {
  it('takes the empty answer: the run goes on with "" as the step’s result and completes', async () => {
    const { alice, builder } = await setUp();
    const { base } = await waitingRun(alice, reviewedResearch());

    const done = await builder.post(`${base}/resume`, { answer: '' });
    expect(done.status).toBe(200);
    // "" is not "again": the router takes its default branch to the end.
    expect(done.body).toMatchObject({
      status: 'completed',
      error: null,
      path: ['start', 'research', 'needs_search', 'lookup', 'review', 'decide', 'end'],
    });
    expect(await readRun(alice, base)).toEqual(done.body);
  });

  it('takes the empty answer on a stream as well, and the next step sees it', async () => {
    const { app, alice } = await setUp();
    const { base } = await waitingRun(alice, askThenAnswer());
    const done = await streamFrom(app, alice, `${base}/resume`, { answer: '' });
    expect(done.events.map((e) => e.event)).not.toContain('error');
    expect(done.events.at(-1)).toMatchObject({
      event: 'end',
      data: { status: 'completed', path: ['start', 'ask', 'reply', 'end'] },
    });
    // The model answered the transcript whose last message is the empty answer.
    expect(done.events.at(-1)!.data.output).toMatch(/^Offline model: you said ""\./);
  });

  it('refuses an answer that is not text, or too long, with 400 and changes nothing; a good answer then finishes it', async () => {
    const { alice, builder } = await setUp();
    const { base, waiting } = await waitingRun(alice, reviewedResearch());

    for (const body of [{ answer: 42 }, { answer: null }, { answer: ['ok'] }, { answer: { answer: 'ok' } }, {}]) {
      const refused = await builder.post(`${base}/resume`, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body).toMatchObject({ error: 'validation_error', code: 'VALIDATION_ERROR' });
      expect(refused.body.details).toEqual([expect.objectContaining({ loc: ['body', 'answer'] })]);
    }
    const tooLong = await builder.post(`${base}/resume`, { answer: 'x'.repeat(20_001) });
    expect(tooLong.status).toBe(400);
    expect(await readRun(alice, base)).toMatchObject(asWaiting(waiting));

    // The longest answer there is, and the empty one, are answers.
    const longest = await builder.post(`${base}/resume`, { answer: 'x'.repeat(20_000) });
    expect(longest.body).toMatchObject({ status: 'completed' });
  });

  it('keeps a run waiting, as it was, when it cannot go on with a good answer; the answer can be given again', async () => {
    const { app, alice, builder } = await setUp();
    const { base, waiting } = await waitingRun(alice, reviewedResearch());

    // The run's checkpoints cannot be read: the resume fails before the human step takes the answer.
    await hideCheckpoints(app, true);
    const failed = await builder.post(`${base}/resume`, { answer: 'ok' });
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({
      error: 'service_unavailable',
      code: 'WORKFLOW_ANSWER_NOT_TAKEN',
      status: 'waiting',
      waiting_node: 'review',
    });
    expect(failed.body.message).toMatch(/still waits at "review"/);
    expect(await readRun(alice, base)).toMatchObject(asWaiting(waiting));

    const streamed = await streamFrom(app, alice, `${base}/resume`, { answer: 'ok' });
    expect(streamed.events.slice(-3)).toEqual([
      expect.objectContaining({ event: 'error', data: expect.objectContaining({ code: 'answer_not_taken' }) as Json }),
      expect.objectContaining({ event: 'interrupt', data: expect.objectContaining({ node_id: 'review' }) as Json }),
      expect.objectContaining({
        event: 'end',
        data: expect.objectContaining({ status: 'waiting', path: waiting.path }) as Json,
      }),
    ]);
    expect(await readRun(alice, base)).toMatchObject(asWaiting(waiting));

    await hideCheckpoints(app, false);
    const done = await builder.post(`${base}/resume`, { answer: 'ok' });
    expect(done.body).toMatchObject({
      status: 'completed',
      path: ['start', 'research', 'needs_search', 'lookup', 'review', 'decide', 'end'],
    });
  });
});

describe('answers to a human step (the run service)', () => {
  it('refuses, whichever way an answer comes in, one a human step does not take, before the run changes', async () => {
    const { app, alice } = await setUp();
    const { id, runId, base, waiting } = await waitingRun(alice, askThenAnswer());
    const caller: Caller = {
      kind: 'user',
      subject: `user:${alice.id}`,
      username: alice.username,
      roles: [],
      sessionId: undefined,
      via: 'bearer',
    };
    const { runs } = app.services.builder;
    for (const answer of [7, undefined, { answer: 'ok' }, 'x'.repeat(20_001)]) {
      await expect(runs.resume(caller, id, runId, answer)).rejects.toMatchObject({
        status: 400,
        code: 'WORKFLOW_INVALID_ANSWER',
        message: expect.stringMatching(/The run still waits for an answer$/) as unknown,
      });
    }
    expect(await readRun(alice, base)).toMatchObject(asWaiting(waiting));
    const done = await runs.complete(await runs.resume(caller, id, runId, ''), new AbortController().signal);
    expect(done).toMatchObject({ status: 'completed', path: ['start', 'ask', 'reply', 'end'] });
  });
});

describe('answers to a human step (MCP)', () => {
  it('workflow_resume takes the empty answer and refuses one that is not text, leaving the run waiting (SDK client)', async () => {
    const { app, alice } = await setUp();
    const { id, runId, base, waiting } = await waitingRun(alice, askThenAnswer());
    const client = new Client({ name: 'answers-test', version: '1.0.0' });
    await client.connect(sdkTransports['streamable HTTP'](app, alice.credentials));
    try {
      for (const answer of [7, null, 'x'.repeat(20_001)]) {
        const refused = await client
          .callTool({ name: 'workflow_resume', arguments: { workflow_id: id, run_id: runId, answer } })
          .catch((error: unknown) => ({ isError: true, thrown: String(error) }));
        expect(refused.isError, String(answer).slice(0, 20)).toBe(true);
        expect(await readRun(alice, base)).toMatchObject(asWaiting(waiting));
      }

      const done = await client.callTool({
        name: 'workflow_resume',
        arguments: { workflow_id: id, run_id: runId, answer: '' },
      });
      expect(done.isError).toBe(false);
      expect(done.structuredContent).toMatchObject({ status: 'completed', path: ['start', 'ask', 'reply', 'end'] });
      expect(await readRun(alice, base)).toMatchObject({ status: 'completed', error: null });
    } finally {
      await client.close();
    }
  });

  it('tasks/update refuses an answer that is not text with -32602, and then takes the empty answer', async () => {
    const { app, alice } = await setUp();
    const { tool, id } = await publish(alice, askThenAnswer());
    const created = await postModern(
      app,
      alice.token,
      'tools/call',
      { name: tool, arguments: { input: 'Hello' } },
      TASKS_CAPABILITY,
    );
    const taskId = created.result!.taskId as string;
    const waitingTask = await taskUntil(app, alice.token, taskId, 'input_required');
    const [key] = Object.keys(waitingTask.inputRequests as Json);
    const [run] = (await alice.at('builder').get<Json[]>(`/api/builder/workflows/${id}/runs`)).body;
    const base = `/api/builder/workflows/${id}/runs/${run!.run_id as string}`;
    expect(run).toMatchObject({ status: 'waiting', path: ['start'] });

    for (const answer of [7, false, { answer: '' }, 'x'.repeat(20_001)]) {
      const refused = await postModern(
        app,
        alice.token,
        'tasks/update',
        { taskId, inputResponses: { [key!]: { action: 'accept', content: { answer } } } },
        TASKS_CAPABILITY,
      );
      expect(refused.error?.code).toBe(-32602);
    }
    expect(await readRun(alice, base)).toMatchObject(asWaiting(run!));
    expect((await postModern(app, alice.token, 'tasks/get', { taskId }, TASKS_CAPABILITY)).result).toMatchObject({
      status: 'input_required',
      inputRequests: waitingTask.inputRequests,
    });

    const ack = await postModern(
      app,
      alice.token,
      'tasks/update',
      { taskId, inputResponses: { [key!]: { action: 'accept', content: { answer: '' } } } },
      TASKS_CAPABILITY,
    );
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    const done = await taskUntil(app, alice.token, taskId, 'completed');
    expect(done.result).toMatchObject({ isError: false, structuredContent: { status: 'completed' } });
    expect(await readRun(alice, base)).toMatchObject({ status: 'completed', path: ['start', 'ask', 'reply', 'end'] });
  });

  it('a task whose run cannot go on with a good answer asks again, and its run still waits as it was', async () => {
    const { app, alice } = await setUp();
    const { tool, id } = await publish(alice, askThenAnswer());
    const created = await postModern(
      app,
      alice.token,
      'tools/call',
      { name: tool, arguments: { input: 'Hello' } },
      TASKS_CAPABILITY,
    );
    const taskId = created.result!.taskId as string;
    const first = await taskUntil(app, alice.token, taskId, 'input_required');
    const [run] = (await alice.at('builder').get<Json[]>(`/api/builder/workflows/${id}/runs`)).body;
    const base = `/api/builder/workflows/${id}/runs/${run!.run_id as string}`;
    const answer = async (task: Json, text: string) => {
      const [key] = Object.keys(task.inputRequests as Json);
      const inputResponses = { [key!]: { action: 'accept', content: { answer: text } } };
      const ack = await postModern(app, alice.token, 'tasks/update', { taskId, inputResponses }, TASKS_CAPABILITY);
      expect(ack.result).toMatchObject({ resultType: 'complete' });
    };

    await hideCheckpoints(app, true);
    await answer(first, 'blue otters');
    const again = await taskUntil(app, alice.token, taskId, 'input_required');
    expect(again).toMatchObject({ statusMessage: 'What should I say?' });
    expect(await readRun(alice, base)).toMatchObject(asWaiting(run!));

    await hideCheckpoints(app, false);
    await answer(again, 'blue otters');
    const done = await taskUntil(app, alice.token, taskId, 'completed');
    expect(((done.result as Json).structuredContent as Json).output).toMatch(/you said "blue otters"/);
    expect(await readRun(alice, base)).toMatchObject({ status: 'completed', path: ['start', 'ask', 'reply', 'end'] });
  });

  it('the retry of an input_required question takes the empty answer', async () => {
    const { app, alice } = await setUp();
    const { tool, id } = await publish(alice, askThenAnswer());
    const client = closing(
      await connectModernClient(app, alice.token, { capabilities: { elicitation: { form: {} } } }),
    );
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push((request.params as { message: string }).message);
      return Promise.resolve({ action: 'accept', content: { answer: '' } } as never);
    });
    const result = await client.callTool({ name: tool, arguments: { input: 'Hello' } });
    expect(asked).toEqual(['What should I say?']);
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ status: 'completed', path: ['start', 'ask', 'reply', 'end'] });
    const runs = await alice.at('builder').get<Json[]>(`/api/builder/workflows/${id}/runs`);
    expect(runs.body).toEqual([expect.objectContaining({ status: 'completed', error: null })]);
  });
});

async function publish(alice: SignedIn, definition: Json) {
  const created = await alice.at('builder').post('/api/builder/workflows', definition);
  const id = created.body.workflow_id as string;
  const published = await alice.at('builder').post(`/api/builder/workflows/${id}/publish`);
  expect(published.status).toBe(200);
  return { id, tool: published.body.tool_name as string };
}

/** Polls a task until its status is `status`: the task as it then stands. */
async function taskUntil(app: App, token: string, taskId: string, status: string): Promise<Json> {
  let last: Json | undefined;
  await expect
    .poll(
      async () => {
        const reply = await postModern(app, token, 'tasks/get', { taskId }, TASKS_CAPABILITY);
        last = reply.result;
        return last?.status ?? reply.error;
      },
      { timeout: 10_000, interval: 100 },
    )
    .toBe(status);
  return last!;
}

/** Moves the runs' checkpoint table out of the saver's sight (and back), so that reading a checkpoint fails. */
async function hideCheckpoints(app: App, hide: boolean): Promise<void> {
  const { kysely, dialect } = app.infrastructure.db;
  const table = dialect === 'postgres' ? 'langgraph.checkpoints' : 'checkpoints';
  const [from, to] = hide
    ? [table, 'checkpoints_hidden']
    : [table.replace('checkpoints', 'checkpoints_hidden'), 'checkpoints'];
  await sql`ALTER TABLE ${sql.raw(from)} RENAME TO ${sql.raw(to)}`.execute(kysely);
}
