import type { Request, Response } from 'express';
import { callerOf } from '../src/http/authenticate.js';
import { authInfoFor } from '../src/mcp/server.js';

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
