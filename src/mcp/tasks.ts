import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Broadcast } from '../adapters/broadcast/port.js';
import type { Database } from '../db/database.js';
import { toAppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Caller } from '../ports/caller.js';
import type { ExportedMcpTask } from '../ports/data-export.js';
import { subjectOf } from '../ports/subjects.js';
import type { PublishedWorkflows } from '../ports/published-workflows.js';
import { CatalogError, INTERNAL_ERROR, INVALID_PARAMS } from './catalog.js';
import { type WaitingRun, waitingRun } from './published.js';
import type { McpTasksTable, TaskStatus } from './tasks.tables.js';
import { HUMAN_ANSWER_MAX_LENGTH, HumanAnswer } from '../../workflows/runtime.js';

/*
 * MCP tasks (the Tasks extension of the 2026-07-28 revision): a tool call answered at once with a task, which runs
 * on in the background while the client polls it (`tasks/get`), answers the questions it asks (`tasks/update`) and
 * may cancel it (`tasks/cancel`). Tasks are rows in the service's database, so any instance answers for any task,
 * and a task waiting for an answer outlives a restart: its workflow run is checkpointed, and whichever instance
 * receives the answer resumes it.
 */

export type { TaskStatus } from './tasks.tables.js';

/** An embedded request of the revision: what the client asks its user, here a form with one answer. */
export interface QuestionRequest {
  method: 'elicitation/create';
  params: {
    mode: 'form';
    message: string;
    requestedSchema: {
      type: 'object';
      properties: Record<string, { type: 'string'; title: string; description: string; maxLength: number }>;
      required: string[];
    };
  };
}

/** A task as `tasks/get` shows it (the extension's DetailedTask). */
export interface TaskView {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  inputRequests?: Record<string, QuestionRequest>;
  result?: CallToolResult;
  error?: { code: number; message: string };
}

/** What a task does: a tool call, stopped by the signal when the task is cancelled. */
type TaskWork = (signal: AbortSignal) => Promise<CallToolResult>;

/** What a client's form response must carry: the answer a human node takes (`HumanAnswer`). */
const ANSWER_FIELD = 'answer';

/** The question a waiting run asks, as an embedded form request with one text field. */
export function questionRequest(question: string): QuestionRequest {
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: question,
      requestedSchema: {
        type: 'object',
        properties: {
          [ANSWER_FIELD]: {
            type: 'string',
            title: 'Answer',
            description: 'Your answer; the workflow goes on with it',
            maxLength: HUMAN_ANSWER_MAX_LENGTH,
          },
        },
        required: [ANSWER_FIELD],
      },
    },
  };
}

const FormResponse = z.object({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.unknown()).optional(),
});

/** A client's response to a question: an answer, a refusal, or nothing usable. */
type QuestionResponse = { kind: 'answer'; answer: string } | { kind: 'declined' } | { kind: 'invalid' };

/** Reads a client's response to a question (`inputResponses[key]`); the values come from the client, unchecked. */
export function readAnswer(response: unknown): QuestionResponse {
  const parsed = FormResponse.safeParse(response);
  if (!parsed.success) return { kind: 'invalid' };
  if (parsed.data.action !== 'accept') return { kind: 'declined' };
  const answer = HumanAnswer.safeParse(parsed.data.content?.[ANSWER_FIELD]);
  if (!answer.success) return { kind: 'invalid' };
  return { kind: 'answer', answer: answer.data };
}

const CANCEL_CHANNEL = 'mcp-task-cancel';

export interface McpTasksDeps {
  db: Kysely<Database>;
  /** Tells the instance running a task to stop it, wherever the cancel arrives. */
  broadcast: Broadcast;
  /** Answers and stops the workflow runs of waiting tasks. */
  workflows?: Pick<PublishedWorkflows, 'resume' | 'cancel'>;
  /** This instance, as named in the tasks it runs. */
  instanceId: string;
  logger: Logger;
  now: () => Date;
  /** How long a task is kept after it starts; then it is gone, finished or not. */
  ttlMs: number;
  /** How long a running task's claim holds without renewal: past it, the task is taken to have been lost. */
  leaseMs?: number;
  /** How often clients are asked to poll. */
  pollIntervalMs?: number;
  /** How many unfinished tasks one subject may have at once. */
  maxActivePerOwner?: number;
}

/** A task as every write on it names it: by its id and its owner. */
type TaskKey = Pick<McpTasksTable, 'id' | 'owner'>;

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** The tasks of every instance, in the database; the ones this instance runs, in memory. */
export class McpTasks {
  /** The tasks running here, by id, with whose they are (every write on a task names its owner too). */
  readonly #running = new Map<string, { controller: AbortController; owner: string }>();
  readonly #stopListening: () => void;
  readonly #leaseMs: number;
  readonly #pollIntervalMs: number;
  readonly #maxActive: number;
  #renewer: NodeJS.Timeout | undefined;
  readonly #sweeper: NodeJS.Timeout;
  #lastPrune = 0;

  constructor(private readonly deps: McpTasksDeps) {
    this.#leaseMs = deps.leaseMs ?? 30_000;
    this.#pollIntervalMs = deps.pollIntervalMs ?? 1_000;
    this.#maxActive = deps.maxActivePerOwner ?? 20;
    this.#stopListening = deps.broadcast.subscribe(CANCEL_CHANNEL, (id) => this.#running.get(id)?.controller.abort());
    // Expired tasks are invisible at once; their rows go within ten minutes, even when no task starts.
    this.#sweeper = setInterval(
      () => void this.prune().catch((err: unknown) => deps.logger.warn({ err }, 'expired MCP tasks not pruned')),
      10 * 60_000,
    );
    this.#sweeper.unref();
  }

  /** Starts `work` as a task of the caller's, run here; answers the task at once. */
  async start(caller: Caller, tool: string, work: TaskWork): Promise<TaskView> {
    await this.#pruneNowAndThen();
    const owner = subjectOf(caller);
    const active = await this.deps.db
      .selectFrom('mcp_tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('owner', '=', owner)
      .where('status', 'in', ['working', 'input_required'])
      .where('expires_at', '>', this.#at())
      .executeTakeFirstOrThrow();
    if (Number(active.n) >= this.#maxActive)
      throw new CatalogError(
        INVALID_PARAMS,
        `You have ${this.#maxActive} unfinished tasks: wait for one to finish, or cancel one`,
      );
    const now = this.deps.now();
    const row: McpTasksTable = {
      id: randomUUID(),
      owner,
      tool,
      status: 'working',
      status_message: null,
      input_requests: null,
      result: null,
      error: null,
      workflow_id: null,
      run_id: null,
      runner: this.deps.instanceId,
      lease_until: this.#leaseFrom(now),
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      expires_at: new Date(now.getTime() + this.deps.ttlMs).toISOString(),
    };
    await this.deps.db.insertInto('mcp_tasks').values(row).execute();
    this.#drive(row, work);
    return this.#view(row);
  }

  /** The caller's task as it stands; a task lost with the instance that ran it is failed here. */
  async get(caller: Caller, id: string): Promise<TaskView> {
    const row = await this.#find(caller, id);
    if (row.status === 'working' && row.lease_until !== null && row.lease_until < this.#at()) {
      const lost = await this.#finish(row, 'working', {
        status: 'failed',
        error: JSON.stringify({
          code: INTERNAL_ERROR,
          message: 'The task stopped: the instance running it went away before it finished',
        }),
        lease_until: row.lease_until,
      });
      if (lost) this.deps.logger.warn({ task: row.id, runner: row.runner }, 'MCP task lost with its instance');
      return this.#view(await this.#find(caller, id));
    }
    return this.#view(row);
  }

  /**
   * Answers the questions of an `input_required` task. Responses to keys the task does not ask now are ignored (the
   * extension asks for that); an accepted answer resumes the task's workflow run here, a declined one cancels it.
   */
  async update(caller: Caller, id: string, responses: Record<string, unknown>): Promise<void> {
    const row = await this.#find(caller, id);
    if (row.status !== 'input_required' || row.input_requests === null) return;
    const asked = Object.keys(JSON.parse(row.input_requests) as Record<string, unknown>);
    const key = asked.find((k) => Object.hasOwn(responses, k));
    if (key === undefined) return;
    const response = readAnswer(responses[key]);
    if (response.kind === 'invalid')
      throw new CatalogError(
        INVALID_PARAMS,
        `The response to ${key} must accept with an "${ANSWER_FIELD}" of text, at most ${HUMAN_ANSWER_MAX_LENGTH} characters`,
      );
    if (response.kind === 'declined') {
      await this.cancel(caller, id, 'The question was declined');
      return;
    }
    const { workflows } = this.deps;
    if (!workflows || row.workflow_id === null || row.run_id === null) return;
    const claimed = await this.#transition(row, 'input_required', {
      status: 'working',
      status_message: null,
      input_requests: null,
      runner: this.deps.instanceId,
      lease_until: this.#leaseFrom(this.deps.now()),
    });
    // Another instance took the same answer first.
    if (!claimed) return;
    const { workflow_id: workflowId, run_id: runId, status_message: question } = row;
    this.#drive(row, (signal) =>
      workflows.resume(caller, workflowId, runId, response.answer, signal).catch((thrown: unknown) => {
        // The run could not go on with the answer and says it still waits for one: so does the task, asking again.
        const error = toAppError(thrown);
        if (error.extra?.status !== 'waiting') throw thrown;
        return {
          content: [{ type: 'text', text: error.message }],
          structuredContent: { workflow_id: workflowId, run_id: runId, status: 'waiting', question: question ?? '' },
          isError: false,
        };
      }),
    );
  }

  /** Cancels the caller's task: its run stops, wherever it runs. A finished task stays as it was. */
  async cancel(caller: Caller, id: string, reason = 'Cancelled by the client'): Promise<void> {
    const row = await this.#find(caller, id);
    if (TERMINAL.has(row.status)) return;
    const cancelled = await this.#finish(row, row.status, { status: 'cancelled', status_message: reason });
    if (!cancelled) return this.cancel(caller, id, reason);
    if (row.status === 'input_required' && row.workflow_id !== null && row.run_id !== null) {
      await this.deps.workflows?.cancel(caller, row.workflow_id, row.run_id).catch((err: unknown) => {
        this.deps.logger.warn({ err, task: row.id }, 'the waiting run of a cancelled MCP task could not be stopped');
      });
    }
    if (row.status === 'working') {
      const local = this.#running.get(row.id);
      if (local) local.controller.abort();
      else await this.deps.broadcast.publish(CANCEL_CHANNEL, row.id);
    }
  }

  /** Deletes a subject's tasks (erasure, by owner), stopping those that run here. */
  async eraseOf(db: Kysely<Database>, owner: string): Promise<number> {
    const rows = await db.selectFrom('mcp_tasks').select('id').where('owner', '=', owner).execute();
    for (const { id } of rows) this.#running.get(id)?.controller.abort();
    const deleted = await db.deleteFrom('mcp_tasks').where('owner', '=', owner).executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }

  /** A subject's tasks, for their data export. */
  async exportOf(owner: string): Promise<ExportedMcpTask[]> {
    const rows = await this.deps.db
      .selectFrom('mcp_tasks')
      .selectAll()
      .where('owner', '=', owner)
      .where('expires_at', '>', this.#at())
      .orderBy('created_at')
      .execute();
    return rows.map((row) => ({
      task_id: row.id,
      tool: row.tool,
      status: row.status,
      status_message: row.status_message,
      created_at: row.created_at,
      updated_at: row.updated_at,
      expires_at: row.expires_at,
      result: row.result === null ? null : (JSON.parse(row.result) as object),
      error: row.error === null ? null : (JSON.parse(row.error) as object),
    }));
  }

  /** Deletes expired tasks, whoever's they are (a system sweep); returns how many. */
  async prune(): Promise<number> {
    const deleted = await this.deps.db.deleteFrom('mcp_tasks').where('expires_at', '<=', this.#at()).executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }

  /** Shutdown: the tasks running here cannot go on elsewhere, so they fail now rather than when their claim lapses. */
  async stop(): Promise<void> {
    this.#stopListening();
    clearInterval(this.#renewer);
    clearInterval(this.#sweeper);
    const tasks = [...this.#running.entries()].map(([id, { owner }]) => ({ id, owner }));
    for (const { controller } of this.#running.values()) controller.abort();
    for (const task of tasks) {
      await this.#finish(task, 'working', {
        status: 'failed',
        error: JSON.stringify({ code: INTERNAL_ERROR, message: 'The task stopped: the service shut down' }),
      });
    }
  }

  #drive(task: TaskKey, work: TaskWork): void {
    const { id } = task;
    const controller = new AbortController();
    this.#running.set(id, { controller, owner: task.owner });
    this.#renewer ??= setInterval(() => void this.#renew(), Math.max(1_000, Math.floor(this.#leaseMs / 3)));
    this.#renewer.unref();
    const settle = async () => {
      try {
        const result = await work(controller.signal);
        if (!controller.signal.aborted) await this.#settle(task, result);
      } catch (thrown) {
        if (controller.signal.aborted) return;
        // What the caller may know (the run was answered elsewhere meanwhile, say) is told; the rest stays here.
        const error = toAppError(thrown);
        const told = error.expose && error.status < 500;
        if (!told) this.deps.logger.error({ err: thrown, task: id }, 'MCP task failed');
        await this.#finish(task, 'working', {
          status: 'failed',
          error: JSON.stringify({ code: INTERNAL_ERROR, message: told ? error.message : 'Internal error' }),
        });
      } finally {
        this.#running.delete(id);
        if (this.#running.size === 0) {
          clearInterval(this.#renewer);
          this.#renewer = undefined;
        }
      }
    };
    settle().catch((err: unknown) => this.deps.logger.error({ err, task: id }, 'MCP task result not recorded'));
  }

  /** Records what the work ended with: a question (the run waits), or the tool result. */
  async #settle(task: TaskKey, result: CallToolResult): Promise<void> {
    const waiting = this.deps.workflows && waitingRun(result);
    if (waiting) {
      await this.#transition(task, 'working', waitingFields(waiting));
      return;
    }
    await this.#finish(task, 'working', { status: 'completed', result: JSON.stringify(result) });
  }

  /** Extends the claims of the tasks running here: by this instance's claim, not by owner (a system step). */
  async #renew(): Promise<void> {
    const ids = [...this.#running.keys()];
    if (ids.length === 0) return;
    await this.deps.db
      .updateTable('mcp_tasks')
      .set({ lease_until: this.#leaseFrom(this.deps.now()) })
      .where('id', 'in', ids)
      .where('status', '=', 'working')
      .where('runner', '=', this.deps.instanceId)
      .execute()
      .catch((err: unknown) => this.deps.logger.warn({ err }, 'MCP task claims not renewed'));
  }

  /** Ends a task that is still `from` (and, when given, still on the claim read); false when it had moved on. */
  #finish(
    task: TaskKey,
    from: TaskStatus,
    fields: Partial<McpTasksTable> & { status: 'completed' | 'failed' | 'cancelled' },
  ): Promise<boolean> {
    const { lease_until: claim, ...rest } = fields;
    return this.#transition(
      task,
      from,
      { ...rest, input_requests: null, runner: null, lease_until: null },
      claim ?? undefined,
    );
  }

  /**
   * Moves the owner's task on from `from`, as one conditional write: of racing instances, exactly one succeeds, and
   * a task that is not the owner's is never touched.
   */
  async #transition(task: TaskKey, from: TaskStatus, fields: Partial<McpTasksTable>, claim?: string): Promise<boolean> {
    let query = this.deps.db
      .updateTable('mcp_tasks')
      .set({ ...fields, updated_at: this.#at() })
      .where('id', '=', task.id)
      .where('owner', '=', task.owner)
      .where('status', '=', from);
    if (claim !== undefined) query = query.where('lease_until', '=', claim);
    const updated = await query.executeTakeFirst();
    return Number(updated.numUpdatedRows) === 1;
  }

  /** The caller's live task; anyone else's, or an expired one, does not exist. */
  async #find(caller: Caller, id: string): Promise<McpTasksTable> {
    const row = await this.deps.db
      .selectFrom('mcp_tasks')
      .selectAll()
      .where('id', '=', id)
      .where('owner', '=', subjectOf(caller))
      .where('expires_at', '>', this.#at())
      .executeTakeFirst();
    if (!row) throw new CatalogError(INVALID_PARAMS, 'Task not found', { taskId: id });
    return row;
  }

  async #pruneNowAndThen(): Promise<void> {
    const now = this.deps.now().getTime();
    if (now - this.#lastPrune < 60_000) return;
    this.#lastPrune = now;
    await this.prune();
  }

  #view(row: McpTasksTable): TaskView {
    return {
      taskId: row.id,
      status: row.status,
      ...(row.status_message !== null && { statusMessage: row.status_message }),
      createdAt: row.created_at,
      lastUpdatedAt: row.updated_at,
      ttlMs: Date.parse(row.expires_at) - Date.parse(row.created_at),
      pollIntervalMs: this.#pollIntervalMs,
      ...(row.status === 'input_required' &&
        row.input_requests !== null && {
          inputRequests: JSON.parse(row.input_requests) as Record<string, QuestionRequest>,
        }),
      ...(row.status === 'completed' && row.result !== null && { result: JSON.parse(row.result) as CallToolResult }),
      ...(row.status === 'failed' &&
        row.error !== null && { error: JSON.parse(row.error) as { code: number; message: string } }),
    };
  }

  #at(): string {
    return this.deps.now().toISOString();
  }

  #leaseFrom(now: Date): string {
    return new Date(now.getTime() + this.#leaseMs).toISOString();
  }
}

/** A task waiting at a human node: its question under a fresh key, and the run it resumes. */
function waitingFields(waiting: WaitingRun): Partial<McpTasksTable> {
  const key = `${ANSWER_FIELD}-${randomUUID().slice(0, 8)}`;
  return {
    status: 'input_required',
    status_message: waiting.question,
    input_requests: JSON.stringify({ [key]: questionRequest(waiting.question) }),
    workflow_id: waiting.workflowId,
    run_id: waiting.runId,
    runner: null,
    lease_until: null,
  };
}
