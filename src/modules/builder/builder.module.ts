import { staticSite } from '../../http/static-site.js';
import type { Module } from '../../ports/module.js';
import { userObject } from '../../ports/subjects.js';
import { type BuilderRouteDeps, builderRoutes } from './builder.routes.js';
import { type RunDeps, WorkflowRuns } from './builder.runs.js';
import { type BuilderDeps, BuilderService } from './builder.service.js';

export type BuilderModuleDeps = BuilderDeps &
  Omit<RunDeps, 'builder' | 'db' | 'tools' | 'now'> & {
    /** What the web UI is told before sign-in. */
    settings: BuilderRouteDeps['config'];
    /** The built web UI (`npm run build:web`), served at the builder listener's `/`. */
    webRoot: string;
  };

export interface BuilderParts {
  builder: BuilderService;
  runs: WorkflowRuns;
}

/**
 * The workflow builder: versioned workflows, their validation, diffs and generated code, and their runs as LangGraph
 * graphs, on the builder listener with its web UI. The run streams are served by their wire.
 */
export function createBuilderModule(deps: BuilderModuleDeps): Module<BuilderParts> {
  const builder = new BuilderService(deps);
  const runs = new WorkflowRuns({ ...deps, builder });
  return {
    name: 'builder',
    service: { builder, runs },
    routes: { builder: [builderRoutes({ builder, runs, config: deps.settings })] },
    pages: { builder: [staticSite({ root: deps.webRoot, title: 'The workflow builder' })] },
    erasure: [
      { step: 'checkpoints', run: ({ user }) => builder.eraseCheckpointsOf(userObject(user.id)) },
      { step: 'authorization_tuples', run: ({ user }) => builder.eraseTuplesOf(userObject(user.id)) },
      { step: 'workflows', run: ({ user, db }) => BuilderService.eraseRowsOf(db, userObject(user.id)) },
    ],
    exports: [{ section: 'workflows', collect: (userId) => builder.exportOf(userObject(userId)) }],
  };
}
