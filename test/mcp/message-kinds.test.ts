import {
  JSONRPCMessageSchema,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  admitMessage,
  isAnswerMessage,
  isInitializeMessage,
  isRequestMessage,
  nestsWithin,
  parseMessage,
} from '../../src/mcp/messages.js';

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
    for (const message of messages) {
      expect(quick(message), JSON.stringify(message)).toEqual(parsed(message));
      const admitted = admitMessage(message);
      expect('message' in admitted ? { ok: admitted.message } : { refused: true }, JSON.stringify(message)).toEqual(
        parsed(message),
      );
    }
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

describe('nestsWithin', () => {
  /** The rule as first written: level by level, failing once a level past the limit holds anything. */
  function byLevels(value: unknown, limit: number): boolean {
    let level: unknown[] = [value];
    for (let depth = 0; level.length > 0; depth++) {
      if (depth > limit) return false;
      level = level.flatMap((v): unknown[] => (typeof v === 'object' && v !== null ? Object.values(v) : []));
    }
    return true;
  }

  /** A random JSON-like value, up to `depth` levels: scalars, empty and full objects and arrays. */
  function randomValue(depth: number, random: () => number): unknown {
    const pick = random();
    if (depth === 0 || pick < 0.25) return [1, 'a', null, true][Math.floor(random() * 4)];
    const size = Math.floor(random() * 3);
    const children = Array.from({ length: size }, () => randomValue(depth - 1, random));
    return pick < 0.6 ? children : Object.fromEntries(children.map((child, i) => [`k${i}`, child]));
  }

  it('answers as the level-by-level rule over random values and limits', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let deep = 0;
    for (let i = 0; i < 3000; i++) {
      const value = randomValue(8, random);
      for (const limit of [-1, 0, 1, 2, 3, 5, 8])
        expect(nestsWithin(value, limit), `${JSON.stringify(value)} within ${limit}`).toBe(byLevels(value, limit));
      if (!nestsWithin(value, 3)) deep += 1;
    }
    expect(deep).toBeGreaterThan(100);
  });

  it('counts own keys only, and refuses a message nested past the default at once', () => {
    const inherited = Object.create({ deep: { deeper: {} } }) as object;
    expect(nestsWithin({ a: inherited }, 1)).toBe(true);
    let nested: unknown = 1;
    for (let i = 0; i < 100_000; i++) nested = [nested];
    expect(nestsWithin(nested)).toBe(false);
    expect(nestsWithin(JSON.parse(`${'['.repeat(64)}1${']'.repeat(64)}`))).toBe(true);
    expect(nestsWithin(JSON.parse(`${'['.repeat(65)}1${']'.repeat(65)}`))).toBe(false);
  });
});
