import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { linear } from '../builder/helpers.js';
import { closeAfterEach } from '../helpers/app.js';
import { type SignedIn, startTestClient } from '../helpers/client.js';
import { postModern } from '../helpers/mcp.js';

/*
 * The 2026-07-28 revision on `/mcp` reuses its servers from one request to the next, whoever asks: what a caller
 * may see and call is decided on each request, from the authorization tuples as they are then.
 */

const closing = closeAfterEach();

const blocked = (who: SignedIn, tool: string) => ({
  user: `user:${who.id}`,
  relation: 'blocked',
  object: `tool:${tool}`,
});

const search = (app: App, who: SignedIn) =>
  postModern(app, who.token, 'tools/call', { name: 'search_web', arguments: { query: 'pools' } });
const listed = async (app: App, who: SignedIn) =>
  ((await postModern(app, who.token, 'tools/list', {})).result as { tools: { name: string }[] }).tools.map(
    (t) => t.name,
  );
const refusal = {
  isError: true,
  content: [{ type: 'text', text: 'Permission denied: you may not call the tool search_web' }],
};

async function setUp() {
  const { app, as } = closing(await startTestClient());
  return { app, alice: await as('alice'), bob: await as('bob') };
}

describe('MCP 2026-07-28: callers with different permissions on shared servers', () => {
  it('shows and runs for each caller only what that caller may use, with their requests interleaved', async () => {
    const { app, alice, bob } = await setUp();
    await app.infrastructure.authz.write([blocked(bob, 'search_web')]);
    // Six waves of four requests at once, each wave mixing both callers and both kinds of request.
    const outcomes = [];
    for (let wave = 0; wave < 6; wave++) {
      const requests = Array.from({ length: 4 }, async (_, i) => {
        const who = i % 2 === 0 ? alice : bob;
        return (wave + i) % 4 < 2
          ? { who, kind: 'list' as const, listed: await listed(app, who) }
          : { who, kind: 'call' as const, called: await search(app, who) };
      });
      outcomes.push(...(await Promise.all(requests)));
    }
    expect(outcomes).toHaveLength(24);
    for (const outcome of outcomes) {
      const mayUse = outcome.who === alice;
      if (outcome.kind === 'list') expect(outcome.listed.includes('search_web')).toBe(mayUse);
      else if (mayUse) expect(outcome.called.result).toMatchObject({ isError: false });
      else expect(outcome.called.result).toMatchObject(refusal);
    }
    // A server goes back to the pool when its request ends, so the later waves ran on servers the earlier waves
    // built, for whichever caller: no more servers than requests at once.
    expect(app.services.mcp.core.modernServers.built).toBeLessThanOrEqual(4);
  });

  it('refuses a call from the request after a revocation, and runs it again from the request after the grant', async () => {
    const { app, alice, bob } = await setUp();
    expect((await search(app, alice)).result).toMatchObject({ isError: false });
    await app.infrastructure.authz.write([blocked(alice, 'search_web')]);
    expect((await search(app, alice)).result).toMatchObject(refusal);
    // Bob, on a server Alice's requests used, is not affected either way.
    expect((await search(app, bob)).result).toMatchObject({ isError: false });
    // Listings reuse a caller's visible tools for up to a second (the policy point's cache).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await listed(app, alice)).not.toContain('search_web');

    await app.infrastructure.authz.delete([blocked(alice, 'search_web')]);
    expect((await search(app, alice)).result).toMatchObject({ isError: false });
    expect(app.services.mcp.core.modernServers.built).toBe(1);
  });

  it('calls a workflow from the request after it is published, and not after it is withdrawn', async () => {
    const { app, alice } = await setUp();
    const builder = alice.at('builder');
    const created = await builder.post('/api/builder/workflows', linear('Say hello'));
    const id = created.body.workflow_id as string;
    expect((await search(app, alice)).result).toMatchObject({ isError: false });

    const published = await builder.post(`/api/builder/workflows/${id}/publish`);
    expect(published.status).toBe(200);
    const tool = published.body.tool_name as string;
    const ran = await postModern(app, alice.token, 'tools/call', { name: tool, arguments: { input: 'hello' } });
    expect(ran.result).toMatchObject({ isError: false, structuredContent: { status: 'completed' } });

    expect((await builder.delete(`/api/builder/workflows/${id}/publish`)).status).toBe(204);
    const gone = await postModern(app, alice.token, 'tools/call', { name: tool, arguments: { input: 'hello' } });
    expect(gone.error).toMatchObject({ message: `Tool ${tool} not found` });
  });
});
