import type { Request, Response } from 'express';
import { callerOf } from '../src/http/authenticate.js';
import { authInfoFor } from '../src/mcp/server.js';

/** The AuthInfo the SDKs hand their handlers: the caller the route authenticated, and what more the wire adds. */
export const authInfoOf = (req: Request, extra: { resourceMetadataUrl?: string } = {}) => ({
  ...authInfoFor(callerOf(req)),
  ...extra,
});

/** The request as the SDKs' transports read it: with its caller's AuthInfo. */
export const withAuth = (req: Request) => Object.assign(req, { auth: authInfoOf(req) });

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
