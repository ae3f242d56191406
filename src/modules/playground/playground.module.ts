import { staticSite, viewPages } from '../../http/static-site.js';
import type { ToolViews } from '../../ports/tool-views.js';
import type { Module } from '../../ports/module.js';
import { playgroundRoutes, type PlaygroundRouteDeps } from './playground.routes.js';
import { type PlaygroundDeps, PlaygroundService } from './playground.service.js';
import { deleteSessionsOf } from './playground.store.js';

export type PlaygroundModuleDeps = PlaygroundDeps & {
  /** What the web UI is told before sign-in. */
  settings: PlaygroundRouteDeps['config'];
  /** The built web UI (`npm run build:web`), served at the playground listener's `/`. */
  webRoot: string;
  /** The MCP App views the chat shows under the tool calls that have one. */
  views?: ToolViews;
};

/**
 * The playground: chat sessions with the agent, their transcripts and the traces, logs and metrics of their turns,
 * on the playground listener. The chat itself (JSON, server-sent events, WebSocket) is served by its wires.
 */
export function createPlaygroundModule(deps: PlaygroundModuleDeps): Module<PlaygroundService> {
  const playground = new PlaygroundService(deps);
  return {
    name: 'playground',
    service: playground,
    routes: {
      playground: [playgroundRoutes({ playground, config: deps.settings, ...(deps.views && { views: deps.views }) })],
    },
    pages: {
      playground: [
        ...(deps.views ? [viewPages((page) => deps.views!.viewPage(page))] : []),
        staticSite({ root: deps.webRoot, title: 'The playground' }),
      ],
    },
    erasure: [
      {
        step: 'playground_sessions',
        run: async ({ user, db }) => {
          const deleted = await deleteSessionsOf(db, user.id);
          await playground.forgetSessionsOf(user.id);
          return deleted;
        },
      },
    ],
    exports: [{ section: 'playground_sessions', collect: (userId) => playground.exportOf(userId) }],
    shares: [playground],
    stop: () => playground.close(),
  };
}
