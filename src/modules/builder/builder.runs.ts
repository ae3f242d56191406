import { randomUUID } from 'node:crypto';
import type * as LangGraph from '@langchain/langgraph';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { LlmProvider } from '../../adapters/llm/port.js';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import type { Caller } from '../../ports/caller.js';
import { subjectOf } from '../../ports/subjects.js';
import type * as Compiler from '../../../workflows/compile.js';
import {
  RECURSION_LIMIT,
  WorkflowCompileError,
  type WorkflowStateValues,
  initialState,
} from '../../../workflows/plan.js';
import { type HumanQuestion, type HumanResume, HumanAnswer, humanResume } from '../../../workflows/runtime.js';
import type { NodeType } from '../../../workflows/schema.js';
import { answerNotTaken, invalidAnswer, invalidWorkflow, runNotFound, runNotWaiting } from './builder.errors.js';
import type { WorkflowTools } from './builder.ports.js';
import { type RuntimeEvent, WorkflowToolError, serviceRuntime } from './builder.runtime.js';
import type * as schemas from './builder.schemas.js';
import { type BuilderService, runThread } from './builder.service.js';
import { RunRecorder } from './builder.run-events.js';
import {
  type RunEventRow,
  type RunRow,
  type Executor,
  claimRun,
  deleteRunEventsStartedBy,
  findRunStartedBy,
  findRun,
  insertRun,
  lastEventSeq,
  listRuns,
  newestRunStartedBy,
  runEventsAfter,
  updateRun,
} from './builder.store.js';

export type RunView = z.output<typeof schemas.Run>;

/**
 * What a run streams, in order: its start (and, resumed, the answer it goes on with), each node's start and end
 * with what happened inside, then its end.
 */
export type RunEvent =
  | { type: 'run_started'; run_id: string; workflow_id: string; version: number }
  | { type: 'node_started' | 'node_finished'; node_id: string; node_type: NodeType }
  | { type: 'token'; node_id: string; text: string }
  | { type: 'tool_call'; node_id: string; name: string; args: Record<string, unknown> }
  | { type: 'tool_result'; node_id: string; name: string; content: string; is_error: boolean }
  | { type: 'interrupt'; run_id: string; node_id: string; question: string }
  | { type: 'answer'; run_id: string; node_id: string; answer: string }
  | { type: 'error'; run_id: string; code: string; message: string }
  | { type: 'end'; run_id: string; status: RunView['status']; output: string | null; path: string[] };

/** An event as the run showed it, with when (`at`) and its place in the run (`seq`, from 1). */
export type RecordedRunEvent = RunEvent & { seq: number; at: string };

/** The most events one read returns. */
export const MAX_EVENTS = 5_000;

export function recordedEvent(row: RunEventRow): RecordedRunEvent {
  return { ...(JSON.parse(row.event) as RunEvent), seq: row.seq, at: row.at };
}

const STOPPED = { error: 'The run was stopped' };

/** The most events one watch returns (a view reads on from the last it got). */
const WATCH_EVENTS = 500;

/** What a watcher of a run reads (`RunWatch` in the schemas): the run, its events after a place, and its graph. */
export interface RunWatch {
  run: RunView | null;
  events: RecordedRunEvent[];
  /** Where the next read goes on from. */
  next: number;
  /** The service's clock: a watcher that has not got a run yet asks for those started since. */
  now: string;
  graph?: {
    name: string;
    nodes: { id: string; type: NodeType; position?: { x: number; y: number }; data: { label?: string } }[];
    edges: { id: string; source: string; target: string; label?: string }[];
  };
}

/** A watcher that names no time looks for runs started in the minute before it asked. */
const minuteBefore = (iso: string): string => new Date(Date.parse(iso) - 60_000).toISOString();

/** A run admitted to go on: what it is, and its events once the caller reads them. */
export interface RunHandle {
  run: RunView;
  events(signal: AbortSignal): AsyncIterable<RunEvent>;
}

/** The question a resume answers, as the run asked it: where the run goes back to when the answer is not taken. */
interface Asked {
  node: string;
  question: string;
}

/** The error event of a resume whose answer the run could not take: the run still waits, as it did. */
const ANSWER_NOT_TAKEN = 'answer_not_taken';

export interface RunDeps {
  db: Kysely<Database>;
  builder: BuilderService;
  llm: LlmProvider;
  tools: WorkflowTools;
  /** Where runs keep their checkpoints, so that a paused run resumes on any instance, after a restart too. */
  checkpointer: () => Promise<LangGraph.BaseCheckpointSaver>;
  logger: Logger;
  now: () => Date;
}

type NodeEvent = { type: 'node_started' | 'node_finished'; node: string; node_type: NodeType };
type Custom = NodeEvent | RuntimeEvent;

/** What a run goes on from: a new run's state, or the answer to the question a waiting run asked. */
type RunInput = { start: WorkflowStateValues } | { resume: HumanResume };

/** LangGraph and the workflow compiler, as the first run loads them. */
interface Engine {
  langGraph: typeof LangGraph;
  compiler: typeof Compiler;
}

let engine: Promise<Engine> | undefined;
/**
 * Loads LangGraph and the workflow compiler with the first run, not at start-up: LangGraph and LangChain are about
 * 25 MB of memory that a service whose workflows never run does not need.
 */
function loadEngine(): Promise<Engine> {
  engine ??= Promise.all([import('@langchain/langgraph'), import('../../../workflows/compile.js')]).then(
    ([langGraph, compiler]) => ({ langGraph, compiler }),
  );
  return engine;
}

/**
 * Runs of workflows: each compiles the version it started on into a LangGraph graph over the service's model and
 * the caller's MCP tools, checkpointed under the run. A human node pauses the run (`waiting`, with its question);
 * a resume answers it and goes on from the checkpoint.
 */
export class WorkflowRuns {
  constructor(private readonly deps: RunDeps) {}

  /** Admits a run of the workflow's current version (400 when it is not valid for the caller now). */
  async start(
    caller: Caller,
    workflowId: string,
    body: { input: string; vars?: Record<string, unknown> | undefined },
  ): Promise<RunHandle> {
    const row = await this.deps.builder.access(caller, workflowId, 'executor');
    const workflow = await this.deps.builder.definitionOf(row.id, row.current_version);
    const report = await this.deps.builder.validate(caller, workflow);
    if (!report.valid) throw invalidWorkflow(report);
    const at = this.deps.now().toISOString();
    const run: RunRow = {
      id: randomUUID(),
      workflow_id: row.id,
      version: row.current_version,
      started_by: subjectOf(caller),
      status: 'running',
      input: body.input,
      output: null,
      question: null,
      waiting_node: null,
      path: '[]',
      error: null,
      created_at: at,
      updated_at: at,
    };
    await insertRun(this.deps.db, run);
    return this.#handle(caller, run, { start: initialState(body.input, body.vars ?? {}) });
  }

  /**
   * Answers the question a waiting run asks, and lets it go on (409 when it is not waiting). An answer a human node
   * does not take (`HumanAnswer`) is a 400 before anything changes, whichever way it came in.
   */
  async resume(caller: Caller, workflowId: string, runId: string, answer: unknown): Promise<RunHandle> {
    const parsed = HumanAnswer.safeParse(answer);
    if (!parsed.success) throw invalidAnswer(parsed.error.issues[0]?.message ?? 'not text');
    const { before, claimed } = await this.#claimWaiting(caller, workflowId, runId, 'running', {});
    const asked = { node: before.waiting_node ?? '', question: before.question ?? '' };
    return this.#handle(caller, claimed, { resume: humanResume(parsed.data) }, asked);
  }

  /** Stops a waiting run for good: its question is not answered (409 when it is not waiting). */
  async cancel(caller: Caller, workflowId: string, runId: string): Promise<RunView> {
    const { claimed } = await this.#claimWaiting(caller, workflowId, runId, 'cancelled', STOPPED);
    return runView(claimed);
  }

  /** Stops a waiting run the caller started (a run view's Stop): anyone else's is no run (404). */
  async cancelOwn(caller: Caller, workflowId: string, runId: string): Promise<RunView> {
    const { claimed } = await this.#claimWaiting(caller, workflowId, runId, 'cancelled', STOPPED, {
      startedBy: subjectOf(caller),
    });
    return runView(claimed);
  }

  /** Moves a waiting run on, once across instances (409 for every other claim): the run before and as it now stands. */
  async #claimWaiting(
    caller: Caller,
    workflowId: string,
    runId: string,
    to: 'running' | 'cancelled',
    fields: { error?: string },
    own: { startedBy?: string } = {},
  ): Promise<{ before: RunRow; claimed: RunRow }> {
    await this.deps.builder.access(caller, workflowId, 'executor');
    const run = own.startedBy
      ? await findRunStartedBy(this.deps.db, own.startedBy, workflowId, runId)
      : await findRun(this.deps.db, workflowId, runId);
    if (!run) throw runNotFound(runId);
    const at = this.deps.now().toISOString();
    if (run.status !== 'waiting' || !(await claimRun(this.deps.db, run, 'waiting', to, at, own.startedBy)))
      throw runNotWaiting((await findRun(this.deps.db, workflowId, runId))?.status ?? run.status);
    await updateRun(this.deps.db, run, { question: null, waiting_node: null, ...fields });
    return {
      before: run,
      claimed: { ...run, ...fields, status: to, question: null, waiting_node: null, updated_at: at },
    };
  }

  async list(caller: Caller, workflowId: string, limit: number): Promise<RunView[]> {
    await this.deps.builder.access(caller, workflowId, 'viewer');
    return (await listRuns(this.deps.db, workflowId, limit)).map(runView);
  }

  async get(caller: Caller, workflowId: string, runId: string): Promise<RunView> {
    await this.deps.builder.access(caller, workflowId, 'viewer');
    const run = await findRun(this.deps.db, workflowId, runId);
    if (!run) throw runNotFound(runId);
    return runView(run);
  }

  /** What a run showed as it went, in order, as a viewer of its workflow may see it; `at` is when each came. */
  async events(caller: Caller, workflowId: string, runId: string): Promise<RecordedRunEvent[]> {
    await this.deps.builder.access(caller, workflowId, 'viewer');
    const run = await findRun(this.deps.db, workflowId, runId);
    if (!run) throw runNotFound(runId);
    return (await runEventsAfter(this.deps.db, run, 0, MAX_EVENTS)).map(recordedEvent);
  }

  /**
   * A run as its caller watches it (an MCP App view): the run (the one named, or the caller's newest of the workflow
   * started since `since`, before a tool result names it), what it showed after `after`, and, on the first read, the
   * workflow's graph as the run's version has it. Only runs the caller started are seen; any other is no run.
   */
  async watch(
    caller: Caller,
    query: { workflowId: string; runId?: string | undefined; since?: string | undefined; after: number },
  ): Promise<RunWatch> {
    const subject = subjectOf(caller);
    const now = this.deps.now().toISOString();
    const row = query.runId
      ? await findRunStartedBy(this.deps.db, subject, query.workflowId, query.runId)
      : await newestRunStartedBy(this.deps.db, subject, query.workflowId, query.since ?? minuteBefore(now));
    if (!row) {
      if (query.runId) throw runNotFound(query.runId);
      return { run: null, events: [], next: 0, now };
    }
    const events = (await runEventsAfter(this.deps.db, row, query.after, WATCH_EVENTS)).map(recordedEvent);
    const next = events.at(-1)?.seq ?? query.after;
    if (query.after > 0) return { run: runView(row), events, next, now };
    const workflow = await this.deps.builder.definitionOf(row.workflow_id, row.version);
    // The shape of the workflow only: a caller who may run it may not be one who may read its prompts.
    const graph = {
      name: workflow.name,
      nodes: workflow.nodes.map(({ id, type, position, data }) => ({
        id,
        type,
        ...(position && { position }),
        data: data.label === undefined ? {} : { label: data.label },
      })),
      edges: workflow.edges.map(({ id, source, target, label }) => ({
        id,
        source,
        target,
        ...(label !== undefined && { label }),
      })),
    };
    return { run: runView(row), events, next, now, graph };
  }

  /** Erasure, inside its transaction: what the runs the user started showed (their inputs and answers among it). */
  eraseEventsOf(db: Executor, subject: string): Promise<number> {
    return deleteRunEventsStartedBy(db, subject);
  }

  /**
   * Runs to the end or the next pause without streaming: the run as it then stands. A resume whose answer the run
   * could not take is an error (503): the run still waits, as it did.
   */
  async complete(handle: RunHandle, signal: AbortSignal): Promise<RunView> {
    let notTaken = false;
    for await (const event of handle.events(signal))
      if (event.type === 'error' && event.code === ANSWER_NOT_TAKEN) notTaken = true;
    const run = await this.#current(handle.run);
    if (notTaken && run.status === 'waiting') throw answerNotTaken(run.waiting_node ?? '');
    return run;
  }

  /** A run's row as it stands, without an access check (the caller was checked when the run was admitted). */
  async #current(run: RunView): Promise<RunView> {
    const row = await findRun(this.deps.db, run.workflow_id, run.run_id);
    return row ? runView(row) : run;
  }

  #handle(caller: Caller, run: RunRow, input: RunInput, asked?: Asked): RunHandle {
    return {
      run: runView(run),
      events: (signal) => this.#events(caller, run, input, signal, asked),
    };
  }

  /** The run's events as it goes, each kept beside the run too (written in full before the last is read). */
  async *#events(
    caller: Caller,
    run: RunRow,
    input: RunInput,
    signal: AbortSignal,
    asked?: Asked,
  ): AsyncGenerator<RunEvent> {
    const { deps } = this;
    const lastSeq =
      'start' in input
        ? 0
        : await lastEventSeq(deps.db, run).catch((err: unknown) => {
            deps.logger.warn({ err, run: run.id }, 'run events not read');
            return 0;
          });
    const recorder = new RunRecorder(deps, run, lastSeq);
    try {
      for await (const event of this.#stream(caller, run, input, signal, asked)) {
        recorder.add(event);
        yield event;
      }
    } finally {
      await recorder.close();
    }
  }

  async *#stream(
    caller: Caller,
    run: RunRow,
    input: RunInput,
    signal: AbortSignal,
    asked?: Asked,
  ): AsyncGenerator<RunEvent> {
    const { deps } = this;
    yield { type: 'run_started', run_id: run.id, workflow_id: run.workflow_id, version: run.version };
    // The answer a resumption goes on with, as the run shows it (and keeps it, for the run to be reopened).
    if ('resume' in input && asked)
      yield { type: 'answer', run_id: run.id, node_id: asked.node, answer: input.resume.answer };
    const config = { configurable: { thread_id: runThread(run.id) } };
    // The nodes seen to finish: a stopped run's path when its last checkpoint has not been written yet (the
    // PostgreSQL saver writes in the background while the next node runs).
    const finished: string[] = [];
    let langGraph: typeof LangGraph | undefined;
    try {
      const workflow = await deps.builder.definitionOf(run.workflow_id, run.version);
      const { langGraph: loaded, compiler } = await loadEngine();
      langGraph = loaded;
      const runtime = serviceRuntime({ llm: deps.llm, tools: deps.tools, interrupt: langGraph.interrupt }, caller);
      const graph = compiler.compileWorkflow(workflow, runtime, { checkpointer: await deps.checkpointer() });
      const stream = await graph.stream('start' in input ? input.start : new langGraph.Command(input), {
        ...config,
        streamMode: ['custom', 'updates'],
        recursionLimit: RECURSION_LIMIT,
        signal,
      });
      for await (const chunk of stream as AsyncIterable<[string, unknown]>) {
        const [mode, data] = chunk;
        if (mode !== 'custom') continue;
        const event = wireEvent(data as Custom);
        if (event.type === 'node_finished') finished.push(event.node_id);
        yield event;
      }
      const state = await graph.getState(config);
      const values = state.values as { vars?: Record<string, unknown>; path?: string[] };
      const path = values.path ?? [];
      const question = state.tasks.flatMap((task) => task.interrupts ?? []).at(0)?.value as HumanQuestion | undefined;
      const at = deps.now().toISOString();
      if (question) {
        await updateRun(deps.db, run, {
          status: 'waiting',
          question: question.question,
          waiting_node: question.node,
          path: JSON.stringify(path),
          updated_at: at,
        });
        yield { type: 'interrupt', run_id: run.id, node_id: question.node, question: question.question };
        yield { type: 'end', run_id: run.id, status: 'waiting', output: null, path };
        return;
      }
      const output = values.vars?.output;
      const text =
        output === undefined || output === null ? null : typeof output === 'string' ? output : JSON.stringify(output);
      await updateRun(deps.db, run, {
        status: 'completed',
        output: text,
        path: JSON.stringify(path),
        updated_at: at,
      });
      yield { type: 'end', run_id: run.id, status: 'completed', output: text, path };
    } catch (thrown) {
      const failure = failureOf(thrown, signal, langGraph);
      if (failure.code === 'internal_error') deps.logger.error({ err: thrown, run: run.id }, 'workflow run failed');
      // A resume that failed before its human node took the answer lost nothing: the checkpoint still waits there,
      // so the run does too, with its question and path as they were, for the answer to be given again.
      if (asked && failure.code === 'internal_error' && !finished.includes(asked.node)) {
        await updateRun(deps.db, run, {
          status: 'waiting',
          question: asked.question,
          waiting_node: asked.node,
          updated_at: deps.now().toISOString(),
        });
        const path = JSON.parse(run.path) as string[];
        yield {
          type: 'error',
          run_id: run.id,
          code: ANSWER_NOT_TAKEN,
          message: `The run could not go on with the answer; it still waits at "${asked.node}"`,
        };
        yield { type: 'interrupt', run_id: run.id, node_id: asked.node, question: asked.question };
        yield { type: 'end', run_id: run.id, status: 'waiting', output: null, path };
        return;
      }
      const checkpointed = await this.#checkpointedPath(config).catch(() => []);
      const path = checkpointed.length >= finished.length ? checkpointed : finished;
      await updateRun(deps.db, run, {
        status: failure.status,
        error: failure.message,
        path: JSON.stringify(path),
        updated_at: deps.now().toISOString(),
      });
      yield { type: 'error', run_id: run.id, code: failure.code, message: failure.message };
      yield { type: 'end', run_id: run.id, status: failure.status, output: null, path };
    }
  }

  async #checkpointedPath(config: { configurable: { thread_id: string } }): Promise<string[]> {
    const saver = await this.deps.checkpointer();
    const tuple = await saver.getTuple(config);
    const path = (tuple?.checkpoint.channel_values as { path?: unknown } | undefined)?.path;
    return Array.isArray(path) ? (path as string[]) : [];
  }
}

function wireEvent(event: Custom): RunEvent {
  switch (event.type) {
    case 'node_started':
    case 'node_finished':
      return { type: event.type, node_id: event.node, node_type: event.node_type };
    case 'token':
      return { type: 'token', node_id: event.node, text: event.text };
    case 'tool_call':
      return { type: 'tool_call', node_id: event.node, name: event.name, args: event.args };
    case 'tool_result':
      return {
        type: 'tool_result',
        node_id: event.node,
        name: event.name,
        content: event.content,
        is_error: event.is_error,
      };
  }
}

function failureOf(
  thrown: unknown,
  signal: AbortSignal,
  langGraph: typeof LangGraph | undefined,
): { status: 'failed' | 'cancelled'; code: string; message: string } {
  if (signal.aborted) return { status: 'cancelled', code: 'cancelled', message: 'The run was stopped' };
  if (thrown instanceof WorkflowToolError) return { status: 'failed', code: 'tool_failed', message: thrown.message };
  // Validation admits only what compiles; a version saved under older rules may still not.
  if (thrown instanceof WorkflowCompileError)
    return { status: 'failed', code: 'invalid_workflow', message: thrown.message };
  if (langGraph && thrown instanceof langGraph.GraphRecursionError)
    return {
      status: 'failed',
      code: 'step_limit',
      message: `The run took more than ${RECURSION_LIMIT} steps; check the routers for a loop that never ends`,
    };
  return { status: 'failed', code: 'internal_error', message: 'The run failed on an internal error' };
}

export function runView(row: RunRow): RunView {
  return {
    run_id: row.id,
    workflow_id: row.workflow_id,
    version: row.version,
    status: row.status,
    input: row.input,
    output: row.output,
    question: row.question,
    waiting_node: row.waiting_node,
    path: JSON.parse(row.path) as string[],
    error: row.error,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
