import { toNodeHandler } from '@modelcontextprotocol/node';
import { type McpHttpHandler, classifyInboundRequest, createMcpHandler } from '@modelcontextprotocol/server';
import type { Request, Response } from 'express';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { callerOf } from '../src/http/authenticate.js';
import type { Logger } from '../src/logger.js';
import type { McpCore } from '../src/mcp/core.js';
import { callerOfAuthInfo } from '../src/mcp/modern.js';
import { jsonRpcError, withAuth } from './mcp-http.js';

export interface ModernHttpOptions {
  core: McpCore;
  logger: Logger;
  /** The protected-resource metadata URL, named in the revision's scope challenges (403 step-up). */
  resourceMetadataUrl?: string;
}

/**
 * The 2026-07-28 revision on `POST /mcp`: stateless, each request answered by a server lent for it, through the
 * SDK's `createMcpHandler`. This module, and the SDK package under it, is loaded on the first request that may be of
 * the revision (see `surelyLegacy` in `src/mcp/messages.ts`), so an instance that serves only 2025-era clients never holds them.
 */
export class ModernHttp {
  readonly #handler: McpHttpHandler;
  readonly #serve: ReturnType<typeof toNodeHandler>;
  readonly #stopNotifying: () => void;

  private constructor(private readonly options: ModernHttpOptions) {
    const { core, logger } = options;
    // 2025-era traffic never reaches it (routed by `isModern` first), hence `reject`.
    this.#handler = createMcpHandler((ctx) => core.createModernServer(callerOfAuthInfo(ctx.authInfo)), {
      legacy: 'reject',
      onerror: (err) => logger.debug({ err }, 'modern MCP request rejected'),
    });
    // Modern clients hear of changes on their `subscriptions/listen` streams.
    const stopTools = core.onToolsChanged(() => this.#handler.notify.toolsChanged());
    const stopResources = core.onResourceUpdated((uri) => this.#handler.notify.resourceUpdated(uri));
    this.#stopNotifying = () => {
      stopTools();
      stopResources();
    };
    this.#serve = toNodeHandler(this.#handler, {
      onerror: (err) => logger.error({ err }, 'modern MCP request failed'),
    });
  }

  static async create(options: ModernHttpOptions): Promise<ModernHttp> {
    await options.core.loadModern();
    return new ModernHttp(options);
  }

  /**
   * Whether a POST speaks the revision, as the SDK's own entry would route it (`isLegacyRequest`): its classifier,
   * fed the headers and the body express already parsed, without building a web Request for it.
   */
  isModern(req: Request): boolean {
    return (
      classifyInboundRequest({
        httpMethod: req.method,
        protocolVersionHeader: req.get('mcp-protocol-version'),
        mcpMethodHeader: req.get('mcp-method'),
        mcpNameHeader: req.get('mcp-name'),
        body: req.body as unknown,
      }).kind !== 'legacy'
    );
  }

  /** A modern request: a server of its own answers it, with the caller the route authenticated. */
  async answer(req: Request, res: Response): Promise<void> {
    const { core } = this.options;
    const body = req.body as { id?: unknown; method?: unknown; params?: unknown } | undefined;
    const method = body?.method;
    // A client hears the updates of the resources it may read only; any other does not exist for it.
    const following = method === 'subscriptions/listen' ? resourceSubscriptions(body?.params) : [];
    if (following.length > 0) {
      const refused = await core.unreadableResource(callerOf(req), following);
      if (refused !== undefined) {
        core.metrics.messages.inc({ method: 'subscriptions/listen', status: 'error' });
        jsonRpcError(res, 200, ErrorCode.InvalidParams, `Resource not found: ${refused}`, {
          id: body?.id,
          data: { uri: refused },
        });
        return;
      }
    }
    const outcome = watchReply(res);
    res.once('finish', () => {
      if (typeof method === 'string') core.metrics.messages.inc({ method, status: outcome() });
    });
    await this.#serve(withAuth(req, { resourceMetadataUrl: this.options.resourceMetadataUrl }), res, req.body);
  }

  async close(): Promise<void> {
    this.#stopNotifying();
    await this.#handler.close();
  }
}

/** How much of a reply is kept to read its outcome: a JSON-RPC response, or the last event of a stream. */
const WATCHED_BYTES = 64 * 1024;

/**
 * Watches what a modern request's reply sends, to tell its outcome: an HTTP error, or a JSON-RPC error answered
 * with 200 (the revision answers most errors that way), counts as an error; a result as a success.
 */
function watchReply(res: Response): () => 'success' | 'error' {
  const chunks: Buffer[] = [];
  let size = 0;
  const keep = (chunk: unknown, encoding: unknown) => {
    if (size >= WATCHED_BYTES || (typeof chunk !== 'string' && !(chunk instanceof Uint8Array))) return;
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk);
    chunks.push(bytes);
    size += bytes.length;
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.write = ((...args: unknown[]) => {
    keep(args[0], args[1]);
    return write(...args);
  }) as Response['write'];
  res.end = ((...args: unknown[]) => {
    keep(args[0], args[1]);
    return end(...args);
  }) as Response['end'];
  return () => {
    if (res.statusCode >= 400) return 'error';
    const text = Buffer.concat(chunks).toString('utf8');
    const streamed = String(res.getHeader('content-type') ?? '').includes('text/event-stream');
    const last = streamed
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .at(-1)
          ?.slice(5)
      : text;
    try {
      const message = last ? (JSON.parse(last) as { error?: unknown }) : {};
      return message.error === undefined ? 'success' : 'error';
    } catch {
      return 'success';
    }
  };
}

/** The resources a `subscriptions/listen` request asks to follow (`notifications.resourceSubscriptions`). */
function resourceSubscriptions(params: unknown): unknown[] {
  const notifications = (params as { notifications?: { resourceSubscriptions?: unknown } } | undefined)?.notifications;
  const uris = notifications?.resourceSubscriptions;
  return Array.isArray(uris) ? uris : [];
}
