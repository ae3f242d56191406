import { beforeAll, expect, it } from 'vitest';
import { askThenAnswer } from '../builder/helpers.js';
import { ADMIN_PASSWORD, PASSWORD, call } from '../helpers/auth.js';
import { type Json, type Requester, requester } from '../helpers/client.js';
import { twoInstances } from '../helpers/instances.js';
import { describeWithService, probePostgresAndRedis } from '../helpers/services.js';

/**
 * A workflow run paused at a human step on one instance is answered on another, as behind a load balancer: the
 * run's checkpoint and row are in PostgreSQL, the caller's session in Redis. The pause is claimed once across the
 * instances: whichever resume comes second, on whichever instance, is refused with 409.
 */
const services = await probePostgresAndRedis();

describeWithService('a workflow run paused on one instance resumes on another', services, () => {
  // A known bootstrap password: otherwise a generated one is printed.
  const instances = twoInstances('resume', { ADMIN_PASSWORD });
  /** The same signed-in user on each instance's builder listener (one token, issued by A). */
  let onA: Requester;
  let onB: Requester;

  beforeAll(async () => {
    const { a, b } = instances;
    const login = await call(a, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } });
    expect(login.status).toBe(200);
    const token = login.body.access_token as string;
    onA = requester(a, { token }, 'builder');
    onB = requester(b, { token }, 'builder');
  });

  /** Creates the workflow on A and runs it there until it waits for the person: the run's id. */
  async function pausedOnA(): Promise<{ base: string; runId: string }> {
    const created = await onA.post('/api/builder/workflows', askThenAnswer());
    expect(created.status).toBe(201);
    const base = `/api/builder/workflows/${created.body.workflow_id as string}`;
    const run = await onA.post(`${base}/run`, { input: 'Hello' });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      status: 'waiting',
      question: 'What should I say?',
      waiting_node: 'ask',
      output: null,
    });
    return { base, runId: run.body.run_id as string };
  }

  it('answered on B, the run completes there with the answer; A then reads it completed and refuses to resume it', async () => {
    const { base, runId } = await pausedOnA();
    // B, which never saw the run, finds it waiting (its row is shared, not held by A).
    expect((await onB.get(`${base}/runs/${runId}`)).body).toMatchObject({ status: 'waiting', waiting_node: 'ask' });

    const resumed = await onB.post(`${base}/runs/${runId}/resume`, { answer: 'blue otters' });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({
      run_id: runId,
      status: 'completed',
      path: ['start', 'ask', 'reply', 'end'],
      question: null,
      error: null,
    });
    // The model answered the person's answer: B went on from A's checkpoint with the resume value.
    expect(resumed.body.output).toMatch(/^Offline model: you said "blue otters"/);

    const seenOnA = await onA.get(`${base}/runs/${runId}`);
    expect(seenOnA.status).toBe(200);
    expect(seenOnA.body).toEqual(resumed.body);

    const again = await onA.post(`${base}/runs/${runId}/resume`, { answer: 'red herrings' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'conflict', code: 'WORKFLOW_RUN_NOT_WAITING', status: 'completed' });
    // The refused resume changed nothing.
    expect((await onB.get(`${base}/runs/${runId}`)).body).toEqual(resumed.body);
  });

  it('two resumes of one pause sent to both instances at once: one completes it, the other is a 409', async () => {
    const { base, runId } = await pausedOnA();
    const path = `${base}/runs/${runId}/resume`;
    const [onFirst, onSecond] = await Promise.all([
      onA.post<Json>(path, { answer: 'from A' }),
      onB.post<Json>(path, { answer: 'from B' }),
    ]);
    const replies = [onFirst, onSecond];
    expect(replies.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = replies.find((r) => r.status === 200)!;
    const loser = replies.find((r) => r.status === 409)!;
    expect(loser.body).toMatchObject({ error: 'conflict', code: 'WORKFLOW_RUN_NOT_WAITING' });
    // The run went on once, with the winner's answer only.
    const answer = winner === onFirst ? 'from A' : 'from B';
    expect(winner.body).toMatchObject({ status: 'completed', path: ['start', 'ask', 'reply', 'end'] });
    expect(winner.body.output).toMatch(new RegExp(`^Offline model: you said "${answer}"`));
    const final = (await onA.get(`${base}/runs/${runId}`)).body;
    expect(final).toEqual(winner.body);
  });
});
