import type { Request, Response } from 'express';
import { z } from 'zod';
import { callerOf } from '../src/http/authenticate.js';
import { type RouteGroup, defineRoute } from '../src/http/route.js';
import type { Lifecycle } from '../src/lifecycle.js';
import type { McpMetrics } from '../src/mcp/metrics.js';
import type { McpPolicy } from '../src/mcp/policy.js';
import { ResumeRequest, Run, RunRequest, type RunHandle, type WorkflowRuns } from '../src/modules/builder/index.js';
import type { Caller } from '../src/ports/caller.js';
import { openEventStream } from './event-stream.js';
import { type StreamSlot, openStreamSlot } from './stream-slot.js';

export interface BuilderWireDeps {
  runs: WorkflowRuns;
  /** A streamed run takes one of the caller's concurrent streams; connections are counted by wire. */
  policy: Pick<McpPolicy, 'openStream'>;
  metrics: Pick<McpMetrics, 'connections'>;
  lifecycle: Lifecycle;
}

const params = z.object({ workflow_id: z.string().min(1).max(64) });
const STREAM_DESCRIPTION =
  'With Accept: text/event-stream, server-sent events: run_started (then, resuming, answer with the answer given), ' +
  'then node_started / token / tool_call / ' +
  'tool_result / node_finished per node, interrupt when a human node asks its question, and end (after error when ' +
  'the run fails). Otherwise the run as it stands once it ends or pauses. Leaving the stream stops the run.';

const wantsStream = (req: Request) => (req.get('accept') ?? '').includes('text/event-stream');

/** `POST …/run` and `POST …/runs/{run_id}/resume`: a run's events as server-sent events, or the run at its end. */
export function builderRunRoutes(deps: BuilderWireDeps): RouteGroup {
  const { runs } = deps;
  /** Takes the stream slot first (a 429 beyond the limit), so that a refused stream leaves no run behind. */
  const serve = async (req: Request, res: Response, caller: Caller, admit: () => Promise<RunHandle>) => {
    if (wantsStream(req)) {
      const slot = openStreamSlot(deps, caller, { server: 'builder', endsWith: res });
      let handle: RunHandle;
      try {
        handle = await admit();
      } catch (error) {
        slot.release();
        throw error;
      }
      await streamRun(res, handle, slot);
      return undefined;
    }
    const handle = await admit();
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    return runs.complete(handle, gone.signal);
  };
  return {
    prefix: '/api/builder',
    area: 'envelope',
    tags: ['Builder'],
    routes: [
      defineRoute({
        method: 'post',
        path: '/workflows/:workflow_id/run',
        operationId: 'runWorkflow',
        summary: "Run a workflow's current version",
        description: STREAM_DESCRIPTION,
        request: { params, body: RunRequest },
        responses: {
          200: { description: 'The run, or a stream of its events', schema: Run },
          400: { description: 'The workflow is not valid for you now (the `validation` report says why)' },
          404: { description: 'No such workflow of yours' },
          429: { description: 'Too many concurrent streams' },
        },
        handler: async ({ params, body, req, res }) => {
          const caller = callerOf(req);
          return serve(req, res, caller, () => runs.start(caller, params.workflow_id, body));
        },
      }),
      defineRoute({
        method: 'post',
        path: '/workflows/:workflow_id/runs/:run_id/resume',
        operationId: 'resumeWorkflowRun',
        summary: 'Answer the question a waiting run asks, and let it go on',
        description: `${STREAM_DESCRIPTION} The run goes on from its checkpoint, also after a restart.`,
        request: { params: params.extend({ run_id: z.string().min(1).max(64) }), body: ResumeRequest },
        responses: {
          200: { description: 'The run, or a stream of its events', schema: Run },
          400: { description: 'An answer a human step does not take (not text, or too long): the run still waits' },
          404: { description: 'No such workflow or run of yours' },
          409: { description: 'The run is not waiting for an answer' },
          429: { description: 'Too many concurrent streams' },
          503: {
            description:
              'The run could not go on with the answer (`WORKFLOW_ANSWER_NOT_TAKEN`): it still waits, as it was, ' +
              'to be answered again',
          },
        },
        handler: async ({ params, body, req, res }) => {
          const caller = callerOf(req);
          return serve(req, res, caller, () => runs.resume(caller, params.workflow_id, params.run_id, body.answer));
        },
      }),
    ],
  };
}

async function streamRun(res: Response, handle: RunHandle, slot: StreamSlot): Promise<void> {
  const stream = openEventStream(res);
  try {
    for await (const { type, ...data } of handle.events(slot.signal)) stream.send(type, data);
  } finally {
    slot.release();
    stream.end();
  }
}
