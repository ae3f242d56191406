import { once } from 'node:events';
import { type McpHttpHandler, classifyInboundRequest, createMcpHandler } from '@modelcontextprotocol/server';
import type { Request, Response } from 'express';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { callerOf } from '../src/http/authenticate.js';
import type { Logger } from '../src/logger.js';
import type { McpCore } from '../src/mcp/core.js';
import { callerOfAuthInfo } from '../src/mcp/modern.js';
import { headersOf } from '../src/web-headers.js';
import { authInfoOf, jsonRpcError } from './mcp-http.js';

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
    const reply = await this.#reply(req, res);
    if (typeof method === 'string') core.metrics.messages.inc({ method, status: reply.outcome() });
  }

  /**
   * The handler's answer to a request, written as it comes (a JSON-RPC response, or an event stream until it ends
   * or the client leaves). In place of the SDK's Node adapter (`toNodeHandler`), which serializes the parsed body
   * again into a stream the handler never reads, follows the response with a signal of its own, and writes even a
   * JSON answer chunk by chunk: what the handler reads is the request's method, URL and headers, and the body
   * express parsed.
   */
  async #reply(req: Request, res: Response): Promise<Reply> {
    const reply = new Reply(res);
    let request: ClientRequest;
    let response: globalThis.Response;
    try {
      request = new ClientRequest(req, res);
      response = await this.#handler.fetch(request, {
        authInfo: authInfoOf(req, { resourceMetadataUrl: this.options.resourceMetadataUrl }),
        parsedBody: req.body,
      });
    } catch (err) {
      this.options.logger.error({ err }, 'modern MCP request failed');
      const id = (req.body as { id?: unknown } | undefined)?.id;
      jsonRpcError(res, 500, ErrorCode.InternalError, 'Internal error', { id });
      return reply;
    }
    await reply.send(response, request.signal);
    return reply;
  }

  async close(): Promise<void> {
    this.#stopNotifying();
    await this.#handler.close();
  }
}

/**
 * A POST as the handler reads it: its method, URL and headers, without the body (handed over parsed). Its signal
 * aborts when the client leaves before the answer ends; it is made when first read, and the platform's type
 * declares it a plain property, hence its definition in the constructor.
 */
class ClientRequest extends Request {
  #controller: AbortController | undefined;
  #left = false;

  constructor(req: Request, res: Response) {
    const headers = headersOf(req);
    headers.delete('content-length');
    headers.delete('transfer-encoding');
    super(`http://${req.headers.host ?? 'localhost'}${req.originalUrl}`, { method: req.method, headers });
    Object.defineProperty(this, 'signal', { get: () => this.#signal() });
    res.once('close', () => {
      if (!res.writableFinished) this.#leave();
    });
  }

  #signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#left) this.#controller.abort();
    }
    return this.#controller.signal;
  }

  #leave(): void {
    this.#left = true;
    this.#controller?.abort();
  }
}

/** How much of a reply is kept to read its outcome: a JSON-RPC response, or the last event of a stream. */
const WATCHED_BYTES = 64 * 1024;

/**
 * A web Response written to Node's: a JSON answer at once, with its length; an event stream chunk by chunk, waiting
 * for the socket to drain, until it ends or the client leaves. What it sent tells the outcome: an HTTP error, or a
 * JSON-RPC error answered with 200 (the revision answers most errors that way), counts as an error; a result as a
 * success.
 */
class Reply {
  readonly #chunks: Uint8Array[] = [];
  #size = 0;

  constructor(private readonly res: Response) {}

  async send(response: globalThis.Response, left: AbortSignal): Promise<void> {
    const { res } = this;
    const headers: Record<string, string> = {};
    for (const [name, value] of response.headers) headers[name] = value;
    if (response.body === null || left.aborted) {
      res.writeHead(response.status, headers).end();
      return;
    }
    if (!headers['content-type']?.startsWith('text/event-stream')) {
      // A JSON answer: written at once, with its length.
      const body = Buffer.from(await response.arrayBuffer());
      this.#keep(body);
      res.writeHead(response.status, { ...headers, 'content-length': String(body.byteLength) }).end(body);
      return;
    }
    res.writeHead(response.status, headers);
    const closed = new Promise<void>((resolve) => left.addEventListener('abort', () => resolve(), { once: true }));
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        if (left.aborted) break;
        this.#keep(chunk);
        if (!res.write(chunk)) await Promise.race([once(res, 'drain'), closed]);
      }
    } catch {
      // The stream failed or was cancelled: what was written stands.
    }
    res.end();
  }

  #keep(chunk: Uint8Array): void {
    if (this.#size >= WATCHED_BYTES) return;
    this.#chunks.push(chunk);
    this.#size += chunk.byteLength;
  }

  outcome(): 'success' | 'error' {
    const { res } = this;
    if (res.statusCode >= 400) return 'error';
    const text = Buffer.concat(this.#chunks).toString('utf8');
    const streamed = String(res.getHeader('content-type') ?? '').includes('text/event-stream');
    const last = streamed
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .at(-1)
          ?.slice(5)
      : text;
    // A message without the word in it is no error: most answers are told from their text alone.
    if (!last?.includes('"error"')) return 'success';
    try {
      const message = JSON.parse(last) as { error?: unknown };
      return message.error === undefined ? 'success' : 'error';
    } catch {
      return 'success';
    }
  }
}

/** The resources a `subscriptions/listen` request asks to follow (`notifications.resourceSubscriptions`). */
function resourceSubscriptions(params: unknown): unknown[] {
  const notifications = (params as { notifications?: { resourceSubscriptions?: unknown } } | undefined)?.notifications;
  const uris = notifications?.resourceSubscriptions;
  return Array.isArray(uris) ? uris : [];
}
