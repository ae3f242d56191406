import type { Broadcast } from '../../adapters/broadcast/port.js';
import { staticSite } from '../../http/static-site.js';
import type { Module } from '../../ports/module.js';
import { userObject } from '../../ports/subjects.js';
import { type BuilderRouteDeps, builderRoutes } from './builder.routes.js';
import { type RunDeps, WorkflowRuns } from './builder.runs.js';
import { type BuilderDeps, BuilderService } from './builder.service.js';
import { PublishedCatalog } from './builder.publishing.js';

export type BuilderModuleDeps = Omit<BuilderDeps, 'catalog'> &
  Omit<RunDeps, 'builder' | 'db' | 'tools' | 'now'> & {
    /** What the web UI is told before sign-in. */
    settings: BuilderRouteDeps['config'];
    /** The built web UI (`npm run build:web`), served at the builder listener's `/`. */
    webRoot: string;
    /** Tells every instance when a workflow is published, changed or withdrawn. */
    broadcast: Broadcast;
  };

export interface BuilderParts {
  builder: BuilderService;
  runs: WorkflowRuns;
  /** The workflows published as MCP tools, for the MCP core. */
  published: PublishedCatalog;
}

/**
 * The workflow builder: versioned workflows, their validation, diffs and generated code, and their runs as LangGraph
 * graphs, on the builder listener with its web UI. The run streams are served by their wire.
 */
export function createBuilderModule(deps: BuilderModuleDeps): Module<BuilderParts> {
  const published = new PublishedCatalog(deps);
  const builder = new BuilderService({ ...deps, catalog: published });
  const runs = new WorkflowRuns({ ...deps, builder });
  published.bind({
    run: async (caller, id, input, signal) => runs.complete(await runs.start(caller, id, { input }), signal),
    resume: async (caller, id, runId, answer, signal) =>
      runs.complete(await runs.resume(caller, id, runId, answer), signal),
    cancel: (caller, id, runId) => runs.cancel(caller, id, runId),
  });
  return {
    name: 'builder',
    service: { builder, runs, published },
    routes: { builder: [builderRoutes({ builder, runs, config: deps.settings })] },
    pages: { builder: [staticSite({ root: deps.webRoot, title: 'The workflow builder' })] },
    erasure: [
      { step: 'checkpoints', run: ({ user }) => builder.eraseCheckpointsOf(userObject(user.id)) },
      { step: 'authorization_tuples', run: ({ user }) => builder.eraseTuplesOf(userObject(user.id)) },
      { step: 'workflow_run_events', run: ({ user, db }) => runs.eraseEventsOf(db, userObject(user.id)) },
      { step: 'workflows', run: ({ user, db }) => builder.eraseRowsOf(db, userObject(user.id)) },
    ],
    start: () => published.load((id, version) => builder.definitionOf(id, version)),
    stop: () => published.stop(),
    exports: [{ section: 'workflows', collect: (userId) => builder.exportOf(userObject(userId)) }],
  };
}
