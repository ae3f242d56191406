import type { Kysely } from 'kysely';
import type { Telemetry } from '../../adapters/telemetry/port.js';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { staticSite } from '../../http/static-site.js';
import type { Module } from '../../ports/module.js';
import type { ChatTurnService } from '../agent/index.js';
import { playgroundRoutes, type PlaygroundRouteDeps } from './playground.routes.js';
import { PlaygroundService } from './playground.service.js';
import { deleteSessionsOf } from './playground.store.js';

export interface PlaygroundModuleDeps {
  db: Kysely<Database>;
  chat: ChatTurnService;
  telemetry: Pick<Telemetry, 'collect'>;
  logger: Logger;
  now: () => Date;
  maxMessageChars: number;
  /** What the web UI is told before sign-in. */
  settings: PlaygroundRouteDeps['config'];
  /** The built web UI (`npm run build:web`), served at the playground listener's `/`. */
  webRoot: string;
}

/**
 * The playground: chat sessions with the agent, their transcripts and the traces, logs and metrics of their turns,
 * on the playground listener. The chat itself (JSON, server-sent events, WebSocket) is served by its wires.
 */
export function createPlaygroundModule(deps: PlaygroundModuleDeps): Module<PlaygroundService> {
  const playground = new PlaygroundService(deps);
  return {
    name: 'playground',
    service: playground,
    routes: { playground: [playgroundRoutes({ playground, config: deps.settings })] },
    pages: { playground: [staticSite({ root: deps.webRoot, title: 'The playground' })] },
    erasure: [{ step: 'playground_sessions', run: ({ user, db }) => deleteSessionsOf(db, user.id) }],
    exports: [{ section: 'playground_sessions', collect: (userId) => playground.exportOf(userId) }],
  };
}
