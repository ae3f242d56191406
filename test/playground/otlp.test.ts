import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startTestApp } from '../helpers/app.js';
import { accessToken, createUser } from '../helpers/auth.js';
import { serveOnLoopback } from '../helpers/http.js';
import { newSession, playground } from './helpers.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A loopback OTLP/HTTP receiver: what an OpenTelemetry collector would be sent, as JSON. */
async function startReceiver() {
  const received: { path: string; contentType: string | undefined; body: OtlpExport }[] = [];
  const server = await serveOnLoopback((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        body: JSON.parse(Buffer.concat(parts).toString('utf8')) as OtlpExport,
      });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  closers.push(server.close);
  return { url: server.url, received };
}

describe('OTLP export', () => {
  it("sends every turn's spans to OTEL_EXPORTER_OTLP_ENDPOINT, named after the GenAI conventions", async () => {
    const receiver = await startReceiver();
    const app: App = await startTestApp({
      ADMIN_PASSWORD: 'bootstrap-secret-1',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'agent-under-test',
    });
    closers.push(() => app.close());
    await createUser(app, 'alice');
    const token = await accessToken(app, 'alice');
    const session = await newSession(app, token);
    const chat = await playground(app, 'POST', '/api/playground/chat', {
      token,
      body: { session_id: session, message: 'search for spans' },
    });
    expect(chat.status).toBe(200);
    // Also a turn outside the playground: every chat entry point is traced.
    const rest = await fetch(`${app.url('main')}/mcp/message`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'Hello' }),
    });
    expect(rest.status).toBe(200);
    // Closing flushes what the batch holds.
    await app.close();
    closers.pop();

    expect(receiver.received.length).toBeGreaterThan(0);
    expect(receiver.received.every((r) => r.path === '/v1/traces')).toBe(true);
    const resources = receiver.received.flatMap((r) => r.body.resourceSpans);
    const serviceNames = resources.map(
      (r) => r.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue,
    );
    expect(new Set(serviceNames)).toEqual(new Set(['agent-under-test']));
    const spans = resources.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    const names = spans.map((s) => s.name).sort();
    expect(names).toEqual([
      'chat offline',
      'chat offline',
      'chat offline',
      'execute_tool search_web',
      'invoke_agent agent-service',
      'invoke_agent agent-service',
    ]);
    const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value;
    const playgroundRoot = spans.find((s) => attribute(s, 'playground.session_id')?.stringValue === session)!;
    expect(playgroundRoot.name).toBe('invoke_agent agent-service');
    const children = spans.filter((s) => s.traceId === playgroundRoot.traceId && s !== playgroundRoot);
    expect(children.map((s) => s.name)).toHaveLength(3);
    expect(children.every((s) => s.parentSpanId === playgroundRoot.spanId)).toBe(true);
    const tool = children.find((s) => s.name === 'execute_tool search_web')!;
    expect(attribute(tool, 'gen_ai.tool.name')).toEqual({ stringValue: 'search_web' });
  });
});
