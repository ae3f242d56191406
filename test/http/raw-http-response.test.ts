import { describe, expect, it } from 'vitest';
import { RateLimitError, ServiceUnavailableError, UnauthorizedError } from '../../src/errors.js';
import { rawHttpResponse, renderError } from '../../src/http/render-errors.js';

/** The HTTP renderer's answer written as raw HTTP/1.1, for a socket that has no express response around it. */

const CHALLENGE = 'Bearer realm="agent-service", resource_metadata="https://agent.example.com/.well-known/x"';

function parse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  return { statusLine, lines, body };
}

describe('rawHttpResponse', () => {
  it('writes the status line from node’s table, the challenge, and a JSON body of the declared length', () => {
    const raw = rawHttpResponse(
      renderError(
        'mcp',
        new UnauthorizedError('Authentication required', { code: 'AUTH_INVALID_TOKEN' }),
        'trace',
        CHALLENGE,
      ),
    );
    const { statusLine, lines, body } = parse(raw);
    expect(statusLine).toBe('HTTP/1.1 401 Unauthorized');
    expect(lines).toContain(`WWW-Authenticate: ${CHALLENGE}`);
    expect(lines).toContain('Content-Type: application/json; charset=utf-8');
    expect(lines).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(lines).toContain('Connection: close');
    expect(JSON.parse(body)).toEqual({ detail: 'Authentication required' });
  });

  it('carries Retry-After on 429 and on 503', () => {
    const limited = parse(rawHttpResponse(renderError('mcp', new RateLimitError('Slow down', 7), 'trace')));
    expect(limited.statusLine).toBe('HTTP/1.1 429 Too Many Requests');
    expect(limited.lines).toContain('Retry-After: 7');
    const busy = parse(
      rawHttpResponse(
        renderError(
          'mcp',
          new ServiceUnavailableError('Busy', { code: 'SERVICE_UNAVAILABLE', headers: { 'Retry-After': '2' } }),
          'trace',
        ),
      ),
    );
    expect(busy.statusLine).toBe('HTTP/1.1 503 Service Unavailable');
    expect(busy.lines).toContain('Retry-After: 2');
  });

  it('counts the body in bytes, not characters, and keeps header values on one line', () => {
    const raw = rawHttpResponse({ status: 400, headers: { 'X-Note': 'a\r\nSet-Cookie: x=1' }, body: { m: 'héllo' } });
    const { lines, body } = parse(raw);
    expect(lines).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(Buffer.byteLength(body)).toBeGreaterThan(body.length);
    expect(lines).toContain('X-Note: a Set-Cookie: x=1');
    expect(lines.some((line) => line.startsWith('Set-Cookie'))).toBe(false);
  });
});
