import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { buildOpenApiDocument } from '../../src/http/openapi.js';
import { buildTestApp, startTestApp } from '../helpers/app.js';

type Operation = {
  operationId: string;
  security: unknown[];
  servers?: { url: string }[];
  responses: Record<string, unknown>;
};
type Document = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>> };

let app: App;
let doc: Document;

beforeAll(async () => {
  app = await startTestApp();
  const res = await fetch(`${app.url('main')}/openapi.json`);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = (await res.json()) as Document;
});
afterAll(() => app.close());

describe('OpenAPI description at /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('2.8.0');
  });

  it('describes every route each listener serves, under its own server', () => {
    for (const listener of ['main', 'playground', 'builder'] as const) {
      for (const group of app.routeGroups(listener)) {
        for (const route of group.routes) {
          const path = `${group.prefix}${route.path}`.replace(/\/$/, '').replace(/:(\w+)/g, '{$1}') || '/';
          const operation = doc.paths[path]?.[route.method];
          if (route.internal) {
            // Internal routes (the gateway's key exchange) are served but kept out of the public description.
            expect(operation, `${route.method.toUpperCase()} ${path}`).toBeUndefined();
            continue;
          }
          expect(operation, `${route.method.toUpperCase()} ${path}`).toBeDefined();
          expect(operation!.operationId).toBe(route.operationId);
          // A route served by several listeners (sign-in) names each of them as a server.
          if (listener === 'main') expect(operation!.servers?.[0]?.url ?? '/').toBe('/');
          else if (operation!.servers!.length > 1)
            expect(operation!.servers).toContainEqual({ url: app.url(listener) });
          else expect(operation!.servers).toEqual([{ url: app.url(listener) }]);
        }
      }
    }
  });

  it('documents the error body of each status, shared as components', () => {
    const health = doc.paths['/health']!.get!;
    // Probes stand before the start-up gate; the HTTP parser, the body parsers and the Host guard stand before
    // every route.
    expect(Object.keys(health.responses).sort()).toEqual(['200', '400', '403', '413', '415', '431', '500', '503']);
    expect(JSON.stringify(health.responses['500'])).toContain('#/components/schemas/ErrorEnvelope');
    expect(health.security).toEqual([]);
  });

  it('is generated from the schemas that validate requests', () => {
    const version = doc.paths['/api/version']!.get!;
    expect(JSON.stringify(version.responses['200'])).toContain('#/components/schemas/VersionMetadata');
    const components = (doc as unknown as { components: { schemas: Record<string, { required?: string[] }> } })
      .components;
    expect(components.schemas.VersionMetadata!.required).toEqual(
      expect.arrayContaining(['version', 'api_version', 'supported_versions', 'deprecated_versions', 'sunset_dates']),
    );
  });

  it('includes the single sign-on routes when an OIDC provider is configured', async () => {
    const oidc = buildTestApp({
      AUTH_PROVIDER: 'oidc',
      OIDC_ISSUER_URL: 'https://idp.example.com/realms/acme',
      OIDC_CLIENT_ID: 'agent',
      OIDC_CLIENT_SECRET: 'secret',
      OIDC_REDIRECT_URI: 'https://agent.example.com/auth/sso/callback',
    });
    try {
      const document = buildOpenApiDocument([{ groups: oidc.routeGroups('main') }]) as unknown as Document;
      expect((await new Validator().validate(document as unknown as Record<string, unknown>)).valid).toBe(true);
      expect(Object.keys(document.paths)).toEqual(
        expect.arrayContaining(['/auth/sso/login', '/auth/sso/callback', '/auth/sso/logout']),
      );
      expect(doc.paths['/auth/sso/login']).toBeUndefined();
    } finally {
      await oidc.close();
    }
  });
});
