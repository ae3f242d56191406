import {
  type AuthInfo,
  type CacheHint,
  type ListToolsResult,
  McpServer,
  ProtocolError,
  ResourceNotFoundError,
  ResourceTemplate,
} from '@modelcontextprotocol/server';
import type { Caller } from '../ports/caller.js';
import {
  CONVERSATION_RESOURCE,
  CatalogError,
  INSTRUCTIONS,
  type McpServerDeps,
  PROMPTS,
  RESOURCE_NOT_FOUND,
  SERVER_CAPABILITIES,
  SERVER_INFO,
  SERVER_INFO_RESOURCE,
  callTool,
  listTools,
  toolConfig,
} from './catalog.js';
import { missingScope } from './policy.js';
import { PUBLISHED_ANNOTATIONS, PUBLISHED_INPUT, callPublished } from './published.js';

/**
 * How long a client may reuse each list (the 2026-07-28 revision's `ttlMs`), and who may share it. The tool list
 * and the resource list depend on who asks (permissions, their conversations): private to the caller. Prompts,
 * templates and the server's description are the same for everyone. The tool list is kept short-lived, so a grant
 * or a revocation shows within a minute.
 */
export const CACHE_HINTS: Record<
  'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list' | 'server/discover',
  Required<CacheHint>
> = {
  'tools/list': { ttlMs: 60_000, cacheScope: 'private' },
  'resources/list': { ttlMs: 0, cacheScope: 'private' },
  'prompts/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'resources/templates/list': { ttlMs: 3_600_000, cacheScope: 'public' },
  'server/discover': { ttlMs: 3_600_000, cacheScope: 'public' },
};

/** The caller the wire authenticated, carried in the request's AuthInfo (as on the 2025-era servers). */
export function callerOfAuthInfo(authInfo: AuthInfo | undefined): Caller | undefined {
  return authInfo?.extra?.caller as Caller | undefined;
}

/** Catalog errors as this SDK's protocol errors, which encode them as the revision asks. */
function asProtocolError(error: unknown): unknown {
  if (!(error instanceof CatalogError)) return error;
  if (error.code === RESOURCE_NOT_FOUND)
    return new ResourceNotFoundError((error.data as { uri: string }).uri, error.message);
  return new ProtocolError(error.code, error.message, error.data);
}

const rethrown = (error: unknown): never => {
  throw asProtocolError(error);
};

/**
 * A server of the 2026-07-28 revision for one request, on `@modelcontextprotocol/server`: the same catalog as the
 * 2025-era servers (tools through the same executor and policy point, the same resources and prompts), built for
 * the caller the wire authenticated. Nothing outlives the request, so any instance serves any modern request.
 */
export function createModernMcpServer(deps: McpServerDeps, caller: Caller | undefined): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: SERVER_CAPABILITIES,
    instructions: INSTRUCTIONS,
    cacheHints: CACHE_HINTS,
  });

  for (const tool of deps.executor.tools) {
    server.registerTool(
      tool.name,
      {
        ...toolConfig(tool),
        // A token narrowed to reading is told, before the call, which scope to ask for (step-up: 403).
        scopeChallenge: () => {
          const scope = caller && missingScope(caller, { readOnly: tool.annotations.readOnlyHint === true });
          if (!scope || !caller) return undefined;
          return {
            scopes: [...new Set([...(caller.scopes ?? []), scope])] as [string, ...string[]],
            errorDescription: `calling ${tool.name} needs the ${scope} scope`,
          };
        },
      },
      (args: unknown, ctx) =>
        callTool(deps, tool, args, caller, {
          signal: ctx.mcpReq.signal,
          log: (level, data) => ctx.mcpReq.log(level, data, tool.name),
        }),
    );
  }
  const published = deps.published;
  for (const workflow of published?.list() ?? []) {
    server.registerTool(
      workflow.toolName,
      {
        title: workflow.title,
        description: workflow.description,
        inputSchema: PUBLISHED_INPUT,
        annotations: PUBLISHED_ANNOTATIONS,
      },
      ({ input }, ctx) => callPublished(published!, workflow, input, caller, ctx.mcpReq.signal),
    );
  }
  // Each caller sees only the tools it may use, as on the 2025-era servers.
  // The descriptions are plain JSON Schema, the same for both SDKs; only their declared types differ.
  server.server.setRequestHandler('tools/list', async () => ({
    tools: (await listTools(deps, caller)) as unknown as ListToolsResult['tools'],
  }));

  const info = SERVER_INFO_RESOURCE;
  server.registerResource(info.name, info.uri, info.metadata, (uri) => info.read(deps, uri.href));
  const conversation = CONVERSATION_RESOURCE;
  server.registerResource(
    conversation.name,
    new ResourceTemplate(conversation.template, { list: () => conversation.list(deps, caller) }),
    conversation.metadata,
    (uri, variables) => conversation.read(deps, uri.href, String(variables.conversation_id), caller).catch(rethrown),
  );

  for (const prompt of PROMPTS) {
    const { title, description, argsSchema } = prompt;
    server.registerPrompt(prompt.name, { title, description, argsSchema }, (args) =>
      prompt.get(deps, args, caller).catch(rethrown),
    );
  }
  return server;
}
