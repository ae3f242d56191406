import { describe, expect, it } from 'vitest';
import { createEmbeddedSearch, sectionsOf } from '../../src/adapters/search/embedded.js';
import { createSearxngSearch } from '../../src/adapters/search/searxng.js';
import type { App } from '../../src/app.js';
import { ServiceUnavailableError } from '../../src/errors.js';
import { closeAfterEach, startTestApp } from '../helpers/app.js';
import { ADMIN_PASSWORD, PASSWORD, call, createUser } from '../helpers/auth.js';
import { unusedPort } from '../helpers/http.js';
import { type FakeSearxng, searxngResult, startFakeSearxng } from '../fakes/searxng.js';

// Embedded search runs against the real conversations service on a migrated SQLite database; SearXNG runs
// against a FAKE SearXNG instance (test/fakes/searxng.ts) over real HTTP, since none can run here.

const closing = closeAfterEach();

async function startApp(env: Record<string, string> = {}): Promise<App> {
  return closing(await startTestApp({ ADMIN_PASSWORD, ...env }));
}

async function startFake(basePath?: string): Promise<FakeSearxng> {
  return closing(await startFakeSearxng(basePath));
}

const DOCS = `# Handbook

## Refresh tokens

A refresh token is exchanged for a new access token. Each refresh token is used once: reusing a refresh token
revokes its whole family.

## Sessions

A session cookie carries the session id; the refresh of a session token happens on every request.

## Cookies

Cookies are HttpOnly and SameSite=Lax.

## Empty section

## Cafés

The café on the ground floor opens at eight.

## Cafeteria

The cafeteria serves lunch.
`;

describe('embedded search', () => {
  it('splits the documentation at its headings and drops sections without text', () => {
    const sections = sectionsOf(DOCS);
    expect(sections.map((s) => s.title)).toEqual(['Refresh tokens', 'Sessions', 'Cookies', 'Cafés', 'Cafeteria']);
    expect(sections[0]).toMatchObject({
      anchor: 'refresh-tokens',
      text: expect.stringMatching(/^\nA refresh/) as unknown,
    });
  });

  it('ranks the sections that contain every word by how often they occur, titles counting extra', async () => {
    const app = await startApp();
    const search = createEmbeddedSearch(app.services.conversations, DOCS);
    const results = await search.search('refresh token', { limit: 10, subject: 'user:nobody' });

    expect(results).toEqual([
      {
        title: 'Agent Service documentation: Refresh tokens',
        url: 'agent-service://docs/readme#refresh-tokens',
        snippet: expect.stringContaining('A refresh token is exchanged') as unknown,
        source: 'documentation',
      },
      {
        title: 'Agent Service documentation: Sessions',
        url: 'agent-service://docs/readme#sessions',
        snippet: expect.stringContaining('refresh') as unknown,
        source: 'documentation',
      },
    ]);
    expect(search.provider).toBe('embedded');
    expect(await search.search('?!', { limit: 10, subject: 'user:nobody' })).toEqual([]);
  });

  it('matches words with non-ASCII letters whole', async () => {
    const app = await startApp();
    const search = createEmbeddedSearch(app.services.conversations, DOCS);
    const cafe = await search.search('café', { limit: 10, subject: 'user:nobody' });
    expect(cafe.map((r) => r.title)).toEqual(['Agent Service documentation: Cafés']);
  });

  it('looks only in the caller’s own conversations, after the documentation', async () => {
    const app = await startApp();
    const alice = await app.services.conversations.create('user:alice', 'Token questions');
    await app.services.conversations.append(alice, [
      { role: 'user', content: 'How long does a refresh token live?' },
      { role: 'assistant', content: 'Thirty days.' },
    ]);
    const bob = await app.services.conversations.create('user:bob', 'Bob on tokens');
    await app.services.conversations.append(bob, [{ role: 'user', content: 'Bob asks about the refresh token too' }]);
    const search = createEmbeddedSearch(app.services.conversations, DOCS);

    const results = await search.search('refresh token', { limit: 10, subject: 'user:alice' });

    expect(results.map((r) => r.source)).toEqual(['documentation', 'documentation', 'conversation']);
    expect(results[2]).toEqual({
      title: 'Conversation: Token questions',
      url: `conversation://${alice.id}`,
      snippet: 'How long does a refresh token live?',
      source: 'conversation',
    });
    expect(JSON.stringify(results)).not.toContain(bob.id);
  });

  it('returns at most limit results', async () => {
    const app = await startApp();
    const conversation = await app.services.conversations.create('user:alice', 'Tokens');
    await app.services.conversations.append(conversation, [{ role: 'user', content: 'refresh token please' }]);
    const search = createEmbeddedSearch(app.services.conversations, DOCS);

    const one = await search.search('refresh token', { limit: 1, subject: 'user:alice' });
    expect(one.map((r) => r.url)).toEqual(['agent-service://docs/readme#refresh-tokens']);
    const three = await search.search('refresh token', { limit: 3, subject: 'user:alice' });
    expect(three.map((r) => r.url)).toEqual([
      'agent-service://docs/readme#refresh-tokens',
      'agent-service://docs/readme#sessions',
      `conversation://${conversation.id}`,
    ]);
  });
});

describe('SearXNG search (fake SearXNG instance)', () => {
  it('asks /search for JSON with the query and maps the results', async () => {
    const fake = await startFake('/searx');
    fake.results = [
      searxngResult(1),
      searxngResult(2, { content: undefined, engine: undefined }),
      { url: 'https://example.org/untitled', content: 'no title' },
      { title: 'No link', content: 'no url' },
      searxngResult(3),
    ];
    const search = createSearxngSearch(fake.url);

    const results = await search.search('model context protocol & more', { limit: 10, subject: 'user:alice' });

    expect(search.provider).toBe('searxng');
    expect(fake.requests).toEqual([
      {
        method: 'GET',
        path: '/searx/search',
        query: { q: 'model context protocol & more', format: 'json' },
        accept: 'application/json',
      },
    ]);
    expect(results).toEqual([
      { title: 'Result 1', url: 'https://example.org/page-1', snippet: 'Snippet of result 1.', source: 'wikipedia' },
      { title: 'Result 2', url: 'https://example.org/page-2', snippet: '', source: 'web' },
      { title: 'Result 3', url: 'https://example.org/page-3', snippet: 'Snippet of result 3.', source: 'wikipedia' },
    ]);
  });

  it('returns at most limit results', async () => {
    const fake = await startFake();
    fake.results = [1, 2, 3, 4, 5].map((n) => searxngResult(n));
    const results = await createSearxngSearch(`${fake.url}/`).search('x', { limit: 2, subject: 'user:alice' });
    expect(results.map((r) => r.url)).toEqual(['https://example.org/page-1', 'https://example.org/page-2']);
  });

  it('reports a failing instance as ServiceUnavailableError', async () => {
    const fake = await startFake();
    fake.failWith = 500;
    const search = createSearxngSearch(fake.url);
    const failing = search.search('x', { limit: 5, subject: 'user:alice' });
    await expect(failing).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(failing).rejects.toThrow('The search service answered 500');
  });

  it('reports an instance that answers something other than SearXNG JSON as ServiceUnavailableError', async () => {
    const fake = await startFake();
    fake.rawBody = '<html><body>Please sign in</body></html>';
    const search = createSearxngSearch(fake.url);
    await expect(search.search('x', { limit: 5, subject: 'user:alice' })).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
    fake.rawBody = JSON.stringify({ query: 'x', results: 'none' });
    await expect(search.search('x', { limit: 5, subject: 'user:alice' })).rejects.toBeInstanceOf(
      ServiceUnavailableError,
    );
  });

  it('reports an unreachable instance as ServiceUnavailableError', async () => {
    const search = createSearxngSearch(`http://127.0.0.1:${await unusedPort()}`);
    const failing = search.search('x', { limit: 5, subject: 'user:alice' });
    await expect(failing).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(failing).rejects.toThrow('The search service did not answer');
  });

  it('passes the caller’s abort through as it is', async () => {
    const fake = await startFake();
    const controller = new AbortController();
    controller.abort();
    const search = createSearxngSearch(fake.url);
    await expect(
      search.search('x', { limit: 5, subject: 'user:alice', signal: controller.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('serves search_web through the service when SEARCH_URL is set', async () => {
    const fake = await startFake();
    fake.results = [1, 2, 3].map((n) => searxngResult(n));
    const app = await startApp({ SEARCH_URL: fake.url });
    await createUser(app, 'alice');
    const token = (await call(app, 'POST', '/auth/login', { body: { username: 'alice', password: PASSWORD } })).body
      .access_token as string;

    const res = await call(app, 'POST', '/mcp/tools/call', {
      token,
      body: { method: 'tools/call', params: { name: 'search_web', arguments: { query: 'langgraph', max_results: 2 } } },
    });

    expect(res.status).toBe(200);
    expect(res.body.structuredContent).toEqual({
      results: [
        { title: 'Result 1', url: 'https://example.org/page-1', snippet: 'Snippet of result 1.', source: 'wikipedia' },
        {
          title: 'Result 2',
          url: 'https://example.org/page-2',
          snippet: 'Snippet of result 2.',
          source: 'duckduckgo',
        },
      ],
    });
    expect((res.body.content as { text: string }[])[0]!.text).toBe(
      '1. Result 1\n   https://example.org/page-1\n   Snippet of result 1.\n' +
        '2. Result 2\n   https://example.org/page-2\n   Snippet of result 2.',
    );
    expect(fake.requests.at(-1)?.query).toEqual({ q: 'langgraph', format: 'json' });

    fake.failWith = 500;
    const failed = await call(app, 'POST', '/mcp/tools/call', {
      token,
      body: { method: 'tools/call', params: { name: 'search_web', arguments: { query: 'langgraph' } } },
    });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'The search service answered 500' }],
    });
  });
});
