import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * How deep a client's message may nest. The SDK validates what it is given recursively, and fails (a 500, or a
 * socket dropped on a stack overflow) on a message nested thousands deep: such a message is refused as invalid
 * before it reaches the SDK.
 */
export const MAX_MESSAGE_DEPTH = 64;

/** Whether a parsed JSON value nests no deeper than `limit` (counted without recursion). */
export function nestsWithin(value: unknown, limit = MAX_MESSAGE_DEPTH): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    if (depth > limit) return false;
    level = level.flatMap((v): unknown[] => (typeof v === 'object' && v !== null ? Object.values(v) : []));
  }
  return true;
}

/** A JSON-RPC error answer to a message that cannot be taken. */
export interface MessageRefusal {
  jsonrpc: '2.0';
  id: null;
  error: { code: number; message: string };
}

/**
 * Checks one message a client sent on a wire that hands messages to the SDK itself (the SDK drops a message that
 * is not JSON-RPC without a word): the message, or the -32600 error to answer it with.
 */
export function admitMessage(value: unknown): { message: JSONRPCMessage } | { refusal: MessageRefusal } {
  // As the SDK's own transports answer an invalid message: with a null id, whatever the message held.
  const refuse = (message: string) => ({
    refusal: { jsonrpc: '2.0' as const, id: null, error: { code: -32600, message } },
  });
  if (!nestsWithin(value)) return refuse(`Invalid Request: a message may nest at most ${MAX_MESSAGE_DEPTH} deep`);
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) return refuse('Invalid Request: not a JSON-RPC 2.0 request, notification or response');
  return { message: parsed.data };
}
