import type { Request, Response } from 'express';
import { callerOf } from '../src/http/authenticate.js';
import { authInfoFor } from '../src/mcp/server.js';
import { REQUEST_KEYS, isPlainObject, onlyKeys } from '../src/mcp/messages.js';

/** The request as the SDKs' transports read it: with its caller's AuthInfo. */
export const withAuth = (req: Request, extra: { resourceMetadataUrl?: string } = {}) =>
  Object.assign(req, { auth: { ...authInfoFor(callerOf(req)), ...extra } });

export function jsonRpcError(
  res: Response,
  status: number,
  code: number,
  message: string,
  about: { id?: unknown; data?: unknown } = {},
): void {
  const error = { code, message, ...(about.data !== undefined && { data: about.data }) };
  res.status(status).json({ jsonrpc: '2.0', error, id: about.id ?? null });
}

/** The first revision of the 2026-07-28 era; versions compare as strings (`YYYY-MM-DD`). */
const FIRST_MODERN_VERSION = '2026-07-28';
/** The envelope key by which a message claims a revision of that era. */
const VERSION_CLAIM = 'io.modelcontextprotocol/protocolVersion';

/**
 * Whether a POST is certainly of the 2025 era, decided without the 2026-07-28 SDK package: a well-formed JSON-RPC
 * request or notification that claims no revision in its envelope, sent without a header naming a 2026-07-28 one.
 * The SDK's own classifier (`classifyInboundRequest`) routes every such message to the 2025 era; anything else (a
 * claim, a modern header, a batch, a response, a malformed message) is left to that classifier, loaded when first
 * needed, so that the two always agree.
 */
export function surelyLegacy(protocolVersionHeader: string | undefined, body: unknown): boolean {
  if (protocolVersionHeader !== undefined && protocolVersionHeader.trim() >= FIRST_MODERN_VERSION) return false;
  if (!isPlainObject(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string') return false;
  if (!onlyKeys(body, REQUEST_KEYS)) return false;
  const id = body.id;
  if (id !== undefined && typeof id !== 'string' && !Number.isInteger(id)) return false;
  const params = body.params;
  if (params === undefined) return true;
  if (!isPlainObject(params)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  if (!isPlainObject(meta) || VERSION_CLAIM in meta) return false;
  // Keys the SDK's message schema types: when present, its classifier checks them.
  return meta.progressToken === undefined && !('io.modelcontextprotocol/related-task' in meta);
}
