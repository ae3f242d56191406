import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { surelyLegacy } from '../../src/mcp/messages.js';

/**
 * `POST /mcp` tells the common 2025-era message apart without loading the 2026-07-28 SDK package. Whenever it says
 * "surely legacy", the SDK's own classifier must say legacy too, or a modern request (or one the SDK would refuse)
 * would reach the 2025-era transport. Messages it is unsure of go to the SDK's classifier, so a "no" is always safe;
 * the hot 2025-era messages must still get a "yes", or nothing is saved.
 */

const CLAIM = 'io.modelcontextprotocol/protocolVersion';
const envelope = (version: unknown) => ({
  [CLAIM]: version,
  'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
});

const legacyMessages: Array<[string, unknown, string?]> = [
  ['initialize', { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18' } }],
  ['initialized', { jsonrpc: '2.0', method: 'notifications/initialized' }],
  ['tools/call', { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'x', arguments: { q: 1 } } }],
  ['tools/list, no params', { jsonrpc: '2.0', id: 7, method: 'tools/list' }],
  ['2025 header', { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }, '2025-11-25'],
  ['header with spaces', { jsonrpc: '2.0', id: 7, method: 'tools/list' }, ' 2025-06-18 '],
  ['_meta without a claim', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { other: 1 } } }],
];

const otherMessages: Array<[string, unknown, string?]> = [
  [
    'modern tools/call',
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: envelope('2026-07-28') } },
    '2026-07-28',
  ],
  ['modern without header', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope('2026-07-28') } }],
  ['modern header, no claim', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, '2026-07-28'],
  ['modern header, initialize', { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }, '2026-07-28'],
  [
    'initialize with a modern claim',
    { jsonrpc: '2.0', id: 0, method: 'initialize', params: { _meta: envelope('2026-07-28') } },
  ],
  [
    'claim of an older revision',
    { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope('2025-06-18') } },
  ],
  ['claim that is not a string', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { [CLAIM]: 5 } } }],
  [
    'modern notification',
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { _meta: envelope('2026-07-28') } },
  ],
  ['batch', [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]],
  ['empty batch', []],
  ['response', { jsonrpc: '2.0', id: 1, result: {} }],
  ['wrong version', { jsonrpc: '1.0', id: 1, method: 'tools/list' }],
  ['extra key', { jsonrpc: '2.0', id: 1, method: 'tools/list', extra: true }],
  ['null id', { jsonrpc: '2.0', id: null, method: 'tools/list' }],
  ['fractional id', { jsonrpc: '2.0', id: 1.5, method: 'tools/list' }],
  ['id beyond the safe integers', { jsonrpc: '2.0', id: 2 ** 53, method: 'tools/list' }],
  ['params an array', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: [] }],
  ['_meta an array', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: [] } }],
  ['bad progress token', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { progressToken: {} } } }],
  ['string body', 'tools/list'],
  ['null body', null],
];

const sdk = (body: unknown, header?: string) =>
  classifyInboundRequest({ httpMethod: 'POST', protocolVersionHeader: header, body }).kind;

describe('telling 2025-era messages apart without the 2026-07-28 package', () => {
  it.each(legacyMessages)('%s: surely legacy, as the SDK says', (_name, body, header) => {
    expect(sdk(body, header)).toBe('legacy');
    expect(surelyLegacy(header, body)).toBe(true);
  });

  it.each(otherMessages)('%s: left to the SDK', (_name, body, header) => {
    expect(surelyLegacy(header, body)).toBe(false);
  });

  it('never says legacy where the SDK does not, over many shapes of message', () => {
    const ids = [undefined, 1, -1, 'x', null, 1.5, 2 ** 53, -(2 ** 60)];
    const params = [
      undefined,
      {},
      [],
      { _meta: {} },
      { _meta: envelope('2026-07-28') },
      { _meta: { [CLAIM]: '2025-06-18' } },
      { _meta: { progressToken: 'p' } },
      { _meta: { progressToken: 2.5 } },
      { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 1 } } },
    ];
    const methods = ['initialize', 'tools/call', 'notifications/initialized', 5];
    const headers = [undefined, '2025-06-18', '2026-07-28', '2027-01-01', 'junk', ''];
    let sure = 0;
    for (const id of ids)
      for (const param of params)
        for (const method of methods)
          for (const header of headers) {
            const body = {
              jsonrpc: '2.0',
              ...(id !== undefined && { id }),
              method,
              ...(param !== undefined && { params: param }),
            };
            if (!surelyLegacy(header, body)) continue;
            sure += 1;
            expect(sdk(body, header), JSON.stringify({ body, header })).toBe('legacy');
          }
    // Not vacuous: a good share of the shapes are decided without the package.
    expect(sure).toBeGreaterThan(50);
  });
});
