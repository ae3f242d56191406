import {
  type InitializeRequest,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  RELATED_TASK_META_KEY,
  type JSONRPCRequest,
  type JSONRPCResponse,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * How deep a client's message may nest. The SDK validates what it is given recursively, and fails (a 500, or a
 * socket dropped on a stack overflow) on a message nested thousands deep: such a message is refused as invalid
 * before it reaches the SDK.
 */
export const MAX_MESSAGE_DEPTH = 64;

/**
 * Whether a parsed JSON value nests no deeper than `limit`: no value (an object's or array's own) lies more than
 * `limit` levels below it. Every message a client sends is checked, so it allocates nothing; it recurses at most
 * `limit + 2` calls deep, whatever the value holds.
 */
export function nestsWithin(value: unknown, limit = MAX_MESSAGE_DEPTH): boolean {
  if (limit < 0) return false;
  if (typeof value !== 'object' || value === null) return true;
  for (const key in value)
    if (Object.hasOwn(value, key) && !nestsWithin((value as Record<string, unknown>)[key], limit - 1)) return false;
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
  if (isPlainRequest(value)) return { message: value };
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) return refuse('Invalid Request: not a JSON-RPC 2.0 request, notification or response');
  return { message: parsed.data };
}

/*
 * The SDK's guards (`isJSONRPCRequest` and the like) run a zod schema over the whole message for a yes or no, and
 * `JSONRPCMessageSchema.parse` copies what it checks: a tenth of a streamable HTTP tool call's time went to them.
 * The checks below answer the common shapes (a request whose params carry no `_meta`, a result without one) by
 * looking at a few fields, and ask the SDK's schema about everything else; each says yes only where the schema would.
 * `test/mcp/message-kinds.test.ts` compares them with the schemas over a few thousand messages.
 */

type Fields = Record<string, unknown>;

const isObject = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An object as `JSON.parse` makes one: its keys are its own, so a schema's copy of it would hold the same. */
const isPlainObject = (value: unknown): value is Fields =>
  isObject(value) && Object.getPrototypeOf(value) === Object.prototype;

/** Whether an object has no enumerable key but these (what a strict zod object allows). */
function onlyKeys(value: Fields, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

/** The keys a JSON-RPC request or notification may have (the SDK's schemas are strict). */
const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);
const RESULT_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'result']);

/** A JSON-RPC id as the SDK's `RequestIdSchema` takes it: a string or a safe integer. */
const isId = (value: unknown): boolean => typeof value === 'string' || Number.isSafeInteger(value);

/** A plain object of JSON-RPC 2.0 with no key but `keys`. */
function isJsonRpc(value: unknown, keys: ReadonlySet<string>): value is Fields {
  return isPlainObject(value) && value.jsonrpc === '2.0' && onlyKeys(value, keys);
}

/** A request or a notification as the SDK's schemas shape one: a method, and an id they take when there is one. */
function isCall(value: unknown): value is Fields {
  return (
    isJsonRpc(value, REQUEST_KEYS) && typeof value.method === 'string' && (value.id === undefined || isId(value.id))
  );
}

/** A request the SDK's `JSONRPCRequestSchema` takes as it is: params, when present, an object without `_meta`. */
function isPlainRequest(value: unknown): value is JSONRPCRequest {
  if (!isCall(value) || value.id === undefined) return false;
  const { params } = value;
  return params === undefined ? !('params' in value) : isObject(params) && !('_meta' in params);
}

/** A result response the SDK's `JSONRPCResultResponseSchema` takes: its result an object without `_meta`. */
function isPlainResult(value: unknown): boolean {
  return isJsonRpc(value, RESULT_KEYS) && isId(value.id) && isObject(value.result) && !('_meta' in value.result);
}

/**
 * A client's message as the SDK's `JSONRPCMessageSchema.parse` answers it (throwing where it throws): a plain
 * request is its own answer, since the schema's copy of it would hold exactly what it holds.
 */
export function parseMessage(value: unknown): JSONRPCMessage {
  return isPlainRequest(value) ? value : JSONRPCMessageSchema.parse(value);
}

/** `isJSONRPCRequest`, answering a plain request without the schema. */
export function isRequestMessage(message: unknown): message is JSONRPCRequest {
  return isPlainRequest(message) || isJSONRPCRequest(message);
}

/** Whether a message answers a request: a result or an error response, as the SDK's guards say. */
export function isAnswerMessage(message: unknown): message is JSONRPCResponse {
  return isPlainResult(message) || isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
}

/** `isInitializeRequest`, asked only of a message whose method is `initialize` (the schema's literal). */
export function isInitializeMessage(message: unknown): message is InitializeRequest {
  return isObject(message) && message.method === 'initialize' && isInitializeRequest(message);
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
  if (!isCall(body)) return false;
  const params = body.params;
  if (params === undefined) return true;
  if (!isPlainObject(params)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  if (!isPlainObject(meta) || VERSION_CLAIM in meta) return false;
  // Keys the SDK's message schema types: when present, its classifier checks them.
  return meta.progressToken === undefined && !(RELATED_TASK_META_KEY in meta);
}
