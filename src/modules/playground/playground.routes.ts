import { z } from 'zod';
import { callerOf } from '../../http/authenticate.js';
import { Reply, type RouteGroup, defineRoute } from '../../http/route.js';
import { webUiSettingsRoute } from '../../http/web-ui-settings.js';
import type { PlaygroundService } from './playground.service.js';
import { CommonErrorCode, NotFoundError } from '../../errors.js';
import type { ToolViews } from '../../ports/tool-views.js';
import {
  CreateSession,
  LogEntry,
  Metrics,
  PlaygroundConfig,
  Session,
  SessionDetail,
  SessionListItem,
  Trace,
  UpdateSession,
  sessionParams,
} from './playground.schemas.js';

const TAGS = ['Playground'];
const NOT_FOUND = { description: 'No such session of yours' };
const sessionQuery = z.object({ session_id: z.string().min(1).max(64) });

export interface PlaygroundRouteDeps {
  playground: PlaygroundService;
  /** The MCP App views the chat shows under tool calls that have one (none without them). */
  views?: ToolViews;
  /** What the web UI needs to know before anyone signs in, given the origin it is served from. */
  config: (origin: string) => z.output<typeof PlaygroundConfig>;
}

/** Sessions and their observability on the playground listener (`/api/playground/…`); the chat itself is a wire. */
const ViewEntry = z
  .object({
    tool: z.string(),
    title: z.string(),
    resource_uri: z.string(),
    workflow_id: z.string().nullable(),
    page: z.string().describe("The view's page, relative to the playground's root"),
  })
  .meta({ id: 'PlaygroundToolView' });
const ViewCall = z
  .object({
    name: z.string().min(1).max(128),
    arguments: z.record(z.string(), z.unknown()).default({}),
  })
  .meta({ id: 'PlaygroundViewToolCall' });

/**
 * A view's call runs to its end whether or not its page stays: a run it resumes is the person's, as from any host.
 */
const NEVER = new AbortController().signal;

export function playgroundRoutes({ playground, config, views }: PlaygroundRouteDeps): RouteGroup {
  return {
    prefix: '/api/playground',
    area: 'envelope',
    tags: TAGS,
    routes: [
      webUiSettingsRoute({ operationId: 'getPlaygroundConfig', schema: PlaygroundConfig, settings: config }),
      defineRoute({
        method: 'get',
        path: '/views',
        operationId: 'listPlaygroundToolViews',
        summary: 'Your tools that show their results in an MCP App view, for the chat to render',
        responses: { 200: { description: 'The tools with views', schema: z.object({ views: z.array(ViewEntry) }) } },
        handler: async ({ req }) => ({ views: views ? await views.toolViews(callerOf(req)) : [] }),
      }),
      defineRoute({
        method: 'post',
        path: '/views/tools/call',
        operationId: 'callToolFromPlaygroundView',
        summary: 'A tool call from a view the chat renders (only the tools views take part in), as you',
        request: { body: ViewCall },
        responses: {
          200: { description: 'The MCP tool result', schema: z.looseObject({ content: z.array(z.unknown()) }) },
          403: { description: 'You may not call it' },
          404: { description: 'No tool a view may call' },
          429: { description: 'Over your tool-call budget' },
        },
        handler: async ({ body, req }) => {
          const outcome = await views?.callFromView(callerOf(req), body.name, body.arguments, NEVER);
          if (!outcome)
            throw new NotFoundError(`No view calls a tool ${body.name}`, { code: CommonErrorCode.NotFound });
          if (outcome.kind === 'refused') throw outcome.error;
          return outcome.result;
        },
      }),
      defineRoute({
        method: 'post',
        path: '/sessions',
        operationId: 'createPlaygroundSession',
        summary: 'Start a playground session',
        request: { body: CreateSession },
        responses: {
          201: { description: 'Created', schema: Session },
          403: { description: 'A service principal has no playground sessions' },
        },
        handler: async ({ body, req }) => new Reply(201, await playground.createSession(callerOf(req), body)),
      }),
      defineRoute({
        method: 'get',
        path: '/sessions',
        operationId: 'listPlaygroundSessions',
        summary: 'Your playground sessions, most recently active first',
        request: {
          query: z.object({
            limit: z.coerce.number().int().min(1).max(1000).default(20),
            offset: z.coerce.number().int().min(0).default(0),
          }),
        },
        responses: {
          200: { description: 'Your sessions', schema: z.array(SessionListItem) },
          403: { description: 'A service principal has no playground sessions' },
        },
        handler: ({ query, req }) => playground.listSessions(callerOf(req), query),
      }),
      defineRoute({
        method: 'get',
        path: '/sessions/:session_id',
        operationId: 'getPlaygroundSession',
        summary: 'A session with its messages',
        request: { params: sessionParams },
        responses: { 200: { description: 'The session', schema: SessionDetail }, 404: NOT_FOUND },
        handler: ({ params, req }) => playground.getSession(callerOf(req), params.session_id),
      }),
      defineRoute({
        method: 'patch',
        path: '/sessions/:session_id',
        operationId: 'updatePlaygroundSession',
        summary: 'Rename a session or replace its metadata',
        request: { params: sessionParams, body: UpdateSession },
        responses: { 200: { description: 'The session', schema: Session }, 404: NOT_FOUND },
        handler: ({ params, body, req }) => playground.updateSession(callerOf(req), params.session_id, body),
      }),
      defineRoute({
        method: 'post',
        path: '/sessions/:session_id/cancel',
        operationId: 'cancelPlaygroundTurn',
        summary: 'Stop the turn running in a session',
        description:
          'Works from any instance, whichever runs the turn: its stream ends with `end` marked cancelled, and the ' +
          'partial answer is kept with the tokens it used, also in what the model is sent on the next turn.',
        request: { params: sessionParams },
        responses: {
          202: { description: 'The turn is being stopped', schema: z.object({ message: z.string() }) },
          404: NOT_FOUND,
          409: { description: 'No turn is running in this session' },
        },
        handler: async ({ params, req }) => {
          await playground.cancelTurn(callerOf(req), params.session_id);
          return new Reply(202, { message: 'The running turn is being stopped' });
        },
      }),
      defineRoute({
        method: 'delete',
        path: '/sessions/:session_id',
        operationId: 'deletePlaygroundSession',
        summary: 'Delete a session with its messages, traces and logs',
        request: { params: sessionParams },
        responses: { 204: { description: 'Deleted' }, 404: NOT_FOUND },
        handler: async ({ params, req }) => {
          await playground.deleteSession(callerOf(req), params.session_id);
          return new Reply(204);
        },
      }),
      defineRoute({
        method: 'get',
        path: '/observability/traces',
        operationId: 'getPlaygroundTraces',
        summary: "The session's spans: one trace per turn, with its model and tool calls",
        request: {
          query: sessionQuery.extend({ limit: z.coerce.number().int().min(1).max(1000).default(50) }),
        },
        responses: { 200: { description: 'Spans, oldest first', schema: z.array(Trace) }, 404: NOT_FOUND },
        handler: ({ query, req }) => playground.traces(callerOf(req), query.session_id, query.limit),
      }),
      defineRoute({
        method: 'get',
        path: '/observability/logs',
        operationId: 'getPlaygroundLogs',
        summary: "The session's log records at or above a level",
        request: {
          query: sessionQuery.extend({
            level: z
              .string()
              .transform((v) => v.toUpperCase())
              .pipe(z.enum(['DEBUG', 'INFO', 'WARN', 'WARNING', 'ERROR']))
              .transform((v) => (v === 'WARNING' ? 'WARN' : v))
              .default('INFO'),
            limit: z.coerce.number().int().min(1).max(1000).default(200),
          }),
        },
        responses: { 200: { description: 'Log records, oldest first', schema: z.array(LogEntry) }, 404: NOT_FOUND },
        handler: ({ query, req }) => playground.logs(callerOf(req), query.session_id, query.level, query.limit),
      }),
      defineRoute({
        method: 'get',
        path: '/observability/metrics',
        operationId: 'getPlaygroundMetrics',
        summary: "What the session's turns add up to, from its stored messages",
        request: { query: sessionQuery },
        responses: { 200: { description: 'The metrics', schema: Metrics }, 404: NOT_FOUND },
        handler: ({ query, req }) => playground.metrics(callerOf(req), query.session_id),
      }),
    ],
  };
}
