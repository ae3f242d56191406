import { describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InternalError,
  NotFoundError,
  RateLimitError,
  UnauthorizedError,
  ValidationError,
  toAppError,
} from '../../src/errors.js';
import { ErrorAreas, renderError } from '../../src/http/render-errors.js';

const TRACE = 'trace-123';
const issues = [{ loc: ['body', 'name'], msg: 'Too long', type: 'too_big' }];

describe('error bodies by area (spec "Errors")', () => {
  it('renders the authentication envelope with code, retry_after and Retry-After on 429', () => {
    const rendered = renderError(
      'envelope',
      new RateLimitError('Too many login attempts', 60, { code: 'AUTH_RATE_LIMIT' }),
      TRACE,
    );
    expect(rendered.status).toBe(429);
    expect(rendered.headers['Retry-After']).toBe('60');
    expect(rendered.body).toEqual({
      error: 'rate_limit_exceeded',
      message: 'Too many login attempts',
      code: 'AUTH_RATE_LIMIT',
      retry_after: 60,
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
    });
  });

  it('hides the cause of a 500 and gives its trace id instead', () => {
    const rendered = renderError('envelope', new Error('connection string postgres://u:secret@db'), TRACE);
    expect(rendered.status).toBe(500);
    expect(rendered.body).toMatchObject({
      error: 'internal_error',
      message: 'Internal server error',
      code: 'INTERNAL_ERROR',
      trace_id: TRACE,
    });
    expect(JSON.stringify(rendered.body)).not.toContain('secret');
  });

  it('adds WWW-Authenticate to every 401', () => {
    const rendered = renderError(
      'envelope',
      new UnauthorizedError('Invalid credentials', { code: 'AUTH_INVALID_CREDENTIALS' }),
      TRACE,
    );
    expect(rendered.status).toBe(401);
    expect(rendered.headers['WWW-Authenticate']).toBe('Bearer realm="agent-service"');
    expect(rendered.body).toMatchObject({ error: 'unauthorized', code: 'AUTH_INVALID_CREDENTIALS' });
  });

  it('shows the code in the envelope body only: the other areas have no field for it', () => {
    const denied = new ForbiddenError('Not yours', { code: 'AUTH_ACCESS_DENIED' });
    expect(renderError('envelope', denied, TRACE).body).toMatchObject({ code: 'AUTH_ACCESS_DENIED' });
    for (const area of ['mcp', 'data-subject', 'scim'] as const)
      expect(JSON.stringify(renderError(area, denied, TRACE).body)).not.toContain('AUTH_ACCESS_DENIED');
    const expired = new UnauthorizedError('Token has expired', { code: 'AUTH_INVALID_TOKEN' });
    expect(JSON.stringify(renderError('verify', expired, TRACE).body)).not.toContain('AUTH_INVALID_TOKEN');
  });

  it('renders MCP errors as {error:{code,message}} and MCP 401 as {detail}', () => {
    expect(
      renderError('mcp', new ForbiddenError('Tool chat denied', { code: 'AUTH_ACCESS_DENIED' }), TRACE).body,
    ).toEqual({
      error: { code: 'permission_denied', message: 'Tool chat denied' },
    });
    expect(renderError('mcp', new ValidationError('Invalid request body', issues), TRACE).body).toEqual({
      error: { code: 'invalid_request', message: 'Invalid request body' },
    });
    expect(renderError('mcp', new RateLimitError('Slow down', 12), TRACE).body).toEqual({
      error: { code: 'rate_limit_exceeded', message: 'Slow down', retry_after: 12 },
    });
    expect(renderError('mcp', new Error('boom'), TRACE).body).toEqual({
      error: { code: 'internal_error', message: 'Internal server error', trace_id: TRACE },
    });
    expect(
      renderError('mcp', new UnauthorizedError('Token expired', { code: 'AUTH_INVALID_TOKEN' }), TRACE).body,
    ).toEqual({ detail: 'Token expired' });
  });

  it('renders data-subject errors as {detail}, with field issues as 422', () => {
    expect(
      renderError(
        'data-subject',
        new BadRequestError('Confirmation required: pass confirm=true', { code: 'VALIDATION_ERROR' }),
        TRACE,
      ),
    ).toMatchObject({
      status: 400,
      body: { detail: 'Confirmation required: pass confirm=true' },
    });
    expect(renderError('data-subject', new ValidationError('Invalid request body', issues), TRACE)).toMatchObject({
      status: 422,
      body: { detail: issues },
    });
  });

  it('renders SCIM errors with the error schema, integer status and scimType', () => {
    const conflict = renderError('scim', new ConflictError('userName bjensen is taken', { code: 'CONFLICT' }), TRACE);
    expect(conflict.headers['Content-Type']).toMatch(/^application\/scim\+json/);
    expect(conflict.body).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: 409,
      detail: 'userName bjensen is taken',
      scimType: 'uniqueness',
    });
    expect(
      renderError('scim', new NotFoundError('User 42 not found', { code: 'NOT_FOUND' }), TRACE).body,
    ).toMatchObject({
      status: 404,
      scimType: 'notFound',
    });
    expect(
      renderError('scim', new BadRequestError('Bad filter', { code: 'BAD_REQUEST', scimType: 'invalidFilter' }), TRACE)
        .body,
    ).toMatchObject({
      scimType: 'invalidFilter',
    });
    expect(renderError('scim', toAppError({ type: 'entity.parse.failed', status: 400 }), TRACE).body).toMatchObject({
      scimType: 'invalidSyntax',
    });
  });

  it('renders a failed token verification in the verify form', () => {
    const expired = new UnauthorizedError('Token has expired', {
      code: 'AUTH_INVALID_TOKEN',
      expiredAt: '2026-01-01T00:00:00.000Z',
    });
    expect(renderError('verify', expired, TRACE).body).toEqual({
      valid: false,
      error: 'Token has expired',
      expired_at: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('toAppError', () => {
  it('maps body-parser failures to client errors', () => {
    expect(toAppError({ type: 'entity.parse.failed', status: 400 })).toMatchObject({
      status: 400,
      code: 'MALFORMED_JSON',
    });
    expect(toAppError({ type: 'entity.too.large', status: 413 })).toMatchObject({
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect(toAppError({ type: 'charset.unsupported', status: 415 })).toMatchObject({ status: 415 });
  });

  it('keeps client statuses of framework errors and turns everything else into a 500', () => {
    expect(toAppError({ status: 400, expose: true, message: 'Failed to decode param' })).toMatchObject({ status: 400 });
    expect(toAppError(new TypeError('undefined is not a function'))).toBeInstanceOf(InternalError);
    expect(toAppError('a string')).toBeInstanceOf(InternalError);
    expect(toAppError(null)).toBeInstanceOf(InternalError);
  });
});

describe('ErrorAreas', () => {
  it('chooses the longest matching prefix and falls back to the envelope', () => {
    const areas = new ErrorAreas();
    areas.add('/api/v1', 'envelope');
    areas.add('/api/v1/users', 'data-subject');
    areas.add('/scim/v2', 'scim');
    expect(areas.areaFor('/api/v1/users/me')).toBe('data-subject');
    expect(areas.areaFor('/api/v1/usersx')).toBe('envelope');
    expect(areas.areaFor('/scim/v2')).toBe('scim');
    expect(areas.areaFor('/scim/v22')).toBe('envelope');
    expect(areas.areaFor('/elsewhere')).toBe('envelope');
  });
});
