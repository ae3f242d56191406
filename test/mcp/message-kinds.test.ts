import {
  JSONRPCMessageSchema,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { isAnswerMessage, isInitializeMessage, isRequestMessage, parseMessage } from '../../src/mcp/messages.js';

/**
 * The transport's quick message checks answer what the SDK's schemas answer, for every message: the common shapes
 * they answer themselves, and the variations around them (ids, methods, params, `_meta`, extra keys, wrong types)
 * that they must hand to the schema or refuse as it does.
 */

const ids: unknown[] = [1, -0, 7.5, 2 ** 53, Number.NaN, 'a', null, {}];
const methods: unknown[] = ['tools/call', 'initialize', 5, undefined];
const metas: unknown[] = [{}, { progressToken: 'p' }, { progressToken: 1.5 }, { progressToken: {} }, 'meta', null];
const paramsList: unknown[] = [
  undefined,
  {},
  { name: 'echo', arguments: { text: 'hi' } },
  ...metas.map((_meta) => ({ name: 'echo', _meta })),
  { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
  { protocolVersion: '2025-06-18', capabilities: {} },
  [],
  null,
  'params',
  7,
];
const results: unknown[] = [{}, { content: [] }, ...metas.map((_meta) => ({ content: [], _meta })), [], null, 'ok', 3];
const errors: unknown[] = [
  { code: -32601, message: 'Method not found' },
  { code: -32601.5, message: 'x' },
  { code: 1, message: 2 },
  { code: 1 },
  null,
];
const extras: Record<string, unknown>[] = [{}, { extra: 1 }, { result: {} }, { error: errors[0] }];
const jsonrpcs: unknown[] = ['2.0', '1.0'];

/** Every combination of the parts above, and each of them with one key present but undefined. */
function corpus(): unknown[] {
  const all: unknown[] = [];
  const put = (message: Record<string, unknown>) => {
    all.push(message);
    for (const key of ['id', 'params', 'result']) if (!(key in message)) all.push({ ...message, [key]: undefined });
  };
  for (const jsonrpc of jsonrpcs)
    for (const extra of extras) {
      for (const id of [...ids, undefined])
        for (const method of methods)
          for (const params of paramsList)
            put({
              jsonrpc,
              ...(id !== undefined && { id }),
              ...(method !== undefined && { method }),
              ...(params !== undefined && { params }),
              ...extra,
            });
      for (const id of [...ids, undefined]) {
        for (const result of results) put({ jsonrpc, ...(id !== undefined && { id }), result, ...extra });
        for (const error of errors) put({ jsonrpc, ...(id !== undefined && { id }), error, ...extra });
      }
    }
  // Not messages at all.
  all.push(null, undefined, 'text', 42, [], [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
  // An object whose prototype lends it a key (not an own one): the quick checks must not look past what zod sees.
  all.push(Object.assign(Object.create({ method: 'tools/call' }) as object, { jsonrpc: '2.0', id: 1 }));
  return all;
}

const parsed = (value: unknown) => {
  const answer = JSONRPCMessageSchema.safeParse(value);
  return answer.success ? { ok: answer.data } : { refused: true };
};
const quick = (value: unknown) => {
  try {
    return { ok: parseMessage(value) };
  } catch {
    return { refused: true };
  }
};

describe('quick JSON-RPC message checks', () => {
  const messages = corpus();

  it('covers the shapes the checks answer themselves and those they must not', () => {
    expect(messages.length).toBeGreaterThan(4000);
    expect(messages.filter((m) => isJSONRPCRequest(m)).length).toBeGreaterThan(40);
    const others = messages.filter((m) => !isJSONRPCRequest(m) && JSONRPCMessageSchema.safeParse(m).success);
    expect(others.length).toBeGreaterThan(40);
  });

  it('takes or refuses every message as JSONRPCMessageSchema does, with the same content', () => {
    for (const message of messages) expect(quick(message), JSON.stringify(message)).toEqual(parsed(message));
  });

  it('tells requests, answers and initialization as the SDK guards do', () => {
    for (const message of messages) {
      const shown = JSON.stringify(message);
      expect(isRequestMessage(message), shown).toBe(isJSONRPCRequest(message));
      expect(isAnswerMessage(message), shown).toBe(isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message));
      expect(isInitializeMessage(message), shown).toBe(isInitializeRequest(message));
    }
  });

  it('answers a plain request with the object it was given, as a copy would read', () => {
    const request = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { a: 1 } } };
    expect(parseMessage(request)).toBe(request);
    const withMeta = { ...request, params: { ...request.params, _meta: { progressToken: 'p' } } };
    expect(parseMessage(withMeta)).toEqual(withMeta);
  });
});
