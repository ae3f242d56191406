import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/app.js';
import { type Requester, startTestClient } from '../helpers/client.js';
import { type Json, linear, reviewedResearch } from './helpers.js';

const closing = closeAfterEach();

async function setUp() {
  const client = closing(await startTestClient());
  const alice = await client.as('alice');
  const bob = await client.as('bob');
  return { client, app: client.app, alice: alice.at('builder'), bob: bob.at('builder'), anonymous: client.anonymous };
}

async function create(user: Requester, body: Json = reviewedResearch()) {
  const res = await user.post('/api/builder/workflows', body);
  expect(res.status).toBe(201);
  return res.body as Json & { workflow_id: string; version: number };
}

describe('workflows: create, read, list, delete', () => {
  it('creates version 1 with every optional field filled and older field names read', async () => {
    const { alice } = await setUp();
    const body = linear('Old export');
    (body.nodes[1]!.data as Json) = { prompt: 'Written as prompt' };
    const created = await create(alice, body);
    expect(created).toMatchObject({
      name: 'Old export',
      description: '',
      tags: [],
      schema_version: 1,
      version: 1,
    });
    expect((created.nodes as Json[])[1]).toMatchObject({ data: { system_prompt: 'Written as prompt' } });
    expect((created.nodes as Json[])[1]!.data).not.toHaveProperty('prompt');

    const got = await alice.get(`/api/builder/workflows/${created.workflow_id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);
    expect(got.headers.get('etag')).toBe('"1"');
  });

  it('refuses an invalid definition with 400 and the whole validation report, and saves nothing', async () => {
    const { alice } = await setUp();
    const broken = reviewedResearch();
    broken.edges = broken.edges.filter((e) => e.id !== 'e8'); // the "decide" router loses its default branch
    const res = await alice.post('/api/builder/workflows', broken);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'validation_error', code: 'WORKFLOW_INVALID' });
    const report = res.body.validation as { valid: boolean; errors: Json[] };
    expect(report.valid).toBe(false);
    expect(report.errors).toContainEqual(
      expect.objectContaining({ code: 'router_without_default', node_id: 'decide' }),
    );
    expect((await alice.get('/api/builder/workflows')).body).toEqual([]);
  });

  it('refuses a tool that does not exist, naming the node', async () => {
    const { alice } = await setUp();
    const body = reviewedResearch();
    (body.nodes[3]!.data as Json).tool = 'launch_rockets';
    const res = await alice.post('/api/builder/workflows', body);
    expect(res.status).toBe(400);
    expect((res.body.validation as { errors: Json[] }).errors).toContainEqual(
      expect.objectContaining({ code: 'unknown_tool', node_id: 'lookup' }),
    );
  });

  it('refuses bodies of the wrong shape with 400 and no report', async () => {
    const { alice } = await setUp();
    for (const body of [
      { name: 'x', nodes: 'no', edges: [] },
      { name: 'x', nodes: [{ id: '1bad', type: 'start' }], edges: [] },
      { name: 'x', nodes: [{ id: 'a', type: 'teleport' }], edges: [] },
      { nodes: [], edges: [] },
    ]) {
      const res = await alice.post('/api/builder/workflows', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ error: 'validation_error' });
    }
  });

  it('lists the caller’s workflows newest first, with limit, offset, tag and the total', async () => {
    const { alice, bob } = await setUp();
    const a = await create(alice, reviewedResearch('A'));
    const b = await create(alice, linear('B'));
    const c = await create(alice, reviewedResearch('C'));
    await create(bob, linear('Bob’s'));

    const all = await alice.get<Json[]>('/api/builder/workflows');
    expect(all.status).toBe(200);
    expect(all.body.map((w) => w.name)).toEqual(['C', 'B', 'A']);
    expect(all.headers.get('x-total-count')).toBe('3');
    expect(all.body[0]).toMatchObject({ workflow_id: c.workflow_id, node_count: 7, edge_count: 8, version: 1 });
    expect(all.body[0]).not.toHaveProperty('nodes');

    const page = await alice.get<Json[]>('/api/builder/workflows?limit=1&offset=1');
    expect(page.body.map((w) => w.workflow_id)).toEqual([b.workflow_id]);
    expect(page.headers.get('x-total-count')).toBe('3');

    const tagged = await alice.get<Json[]>('/api/builder/workflows?tag=review');
    expect(tagged.body.map((w) => w.workflow_id)).toEqual([c.workflow_id, a.workflow_id]);
    expect(tagged.headers.get('x-total-count')).toBe('2');

    expect((await alice.get('/api/builder/workflows?limit=0')).status).toBe(400);
  });

  it('shows another user’s workflow to nobody else: 404 for every operation, and nothing changes', async () => {
    const { alice, bob } = await setUp();
    const mine = await create(alice);
    const id = mine.workflow_id;
    const attempts = [
      bob.get(`/api/builder/workflows/${id}`),
      bob.put(`/api/builder/workflows/${id}`, linear('Taken')),
      bob.delete(`/api/builder/workflows/${id}`),
      bob.get(`/api/builder/workflows/${id}/versions`),
      bob.get(`/api/builder/workflows/${id}/versions/1`),
      bob.post(`/api/builder/workflows/${id}/rollback`, { version: 1 }),
      bob.get(`/api/builder/workflows/${id}/diff?from=1`),
      bob.get(`/api/builder/workflows/${id}/runs`),
      bob.post(`/api/builder/workflows/${id}/run`, { input: 'hi' }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: 'not_found' });
    }
    expect((await bob.get('/api/builder/workflows')).body).toEqual([]);
    expect((await alice.get(`/api/builder/workflows/${id}`)).body).toEqual(mine);
  });

  it('imports what it exports: a workflow read back and posted again is the same workflow', async () => {
    const { alice, bob } = await setUp();
    const original = await create(alice);
    const exported = (await alice.get(`/api/builder/workflows/${original.workflow_id}`)).body;
    const imported = await create(bob, JSON.parse(JSON.stringify(exported)) as Json);
    expect(imported.workflow_id).not.toBe(original.workflow_id);
    const { workflow_id: _a, created_at: _b, updated_at: _c, ...content } = imported;
    const { workflow_id: _d, created_at: _e, updated_at: _f, ...expected } = original;
    expect(content).toEqual(expected);
    // A future format is refused rather than misread.
    const future = await alice.post('/api/builder/workflows', { ...reviewedResearch(), schema_version: 2 });
    expect(future.status).toBe(400);
  });

  it('deletes a workflow with its versions: 204, then 404', async () => {
    const { alice } = await setUp();
    const { workflow_id: id } = await create(alice);
    expect((await alice.delete(`/api/builder/workflows/${id}`)).status).toBe(204);
    expect((await alice.get(`/api/builder/workflows/${id}`)).status).toBe(404);
    expect((await alice.get(`/api/builder/workflows/${id}/versions`)).status).toBe(404);
    expect((await alice.delete(`/api/builder/workflows/${id}`)).status).toBe(404);
  });

  it('needs a credential for everything but its health and settings', async () => {
    const { anonymous, app } = await setUp();
    const builder = (path: string, init?: RequestInit) => fetch(`${app.url('builder')}${path}`, init);
    expect((await builder('/api/builder/workflows')).status).toBe(401);
    expect((await builder('/api/builder/tools')).status).toBe(401);
    expect((await builder('/api/builder/health')).status).toBe(200);
    expect((await builder('/api/builder/config')).status).toBe(200);
    // The main listener does not serve the builder's routes.
    expect((await anonymous.get('/api/builder/workflows')).status).toBe(404);
  });
});

describe('versions: every save is one, with concurrency checks, rollback and diff', () => {
  it('saves each update as the next version and keeps the history', async () => {
    const { alice } = await setUp();
    const { workflow_id: id } = await create(alice);
    const edited = reviewedResearch('Reviewed research, v2');
    (edited.nodes[1]!.data as Json).system_prompt = 'Answer in one sentence.';
    const v2 = await alice.put(`/api/builder/workflows/${id}`, { ...edited, version: 1 });
    expect(v2.status).toBe(200);
    expect(v2.body).toMatchObject({ version: 2, name: 'Reviewed research, v2' });
    expect(v2.headers.get('etag')).toBe('"2"');

    const versions = await alice.get<Json[]>(`/api/builder/workflows/${id}/versions`);
    expect(versions.body).toEqual([
      expect.objectContaining({ version: 2, source: 'update', restored_from: null, name: 'Reviewed research, v2' }),
      expect.objectContaining({ version: 1, source: 'create', restored_from: null, name: 'Reviewed research' }),
    ]);
    const one = await alice.get(`/api/builder/workflows/${id}/versions/1`);
    expect(one.status).toBe(200);
    expect((one.body.workflow as Json).name).toBe('Reviewed research');
    expect((await alice.get(`/api/builder/workflows/${id}/versions/9`)).status).toBe(404);
    expect((await alice.get(`/api/builder/workflows/${id}/versions/zero`)).status).toBe(400);
  });

  it('refuses a save based on a stale version with 409 and the current version, by body or If-Match', async () => {
    const { alice } = await setUp();
    const { workflow_id: id } = await create(alice);
    expect((await alice.put(`/api/builder/workflows/${id}`, { ...linear('First edit'), version: 1 })).status).toBe(200);

    const stale = await alice.put(`/api/builder/workflows/${id}`, { ...linear('Lost edit'), version: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ error: 'conflict', code: 'WORKFLOW_VERSION_CONFLICT', current_version: 2 });

    const staleHeader = await alice.put(`/api/builder/workflows/${id}`, linear('Lost edit'), {
      headers: { 'If-Match': '"1"' },
    });
    expect(staleHeader.status).toBe(409);
    expect((await alice.get(`/api/builder/workflows/${id}`)).body).toMatchObject({ name: 'First edit', version: 2 });

    const fresh = await alice.put(`/api/builder/workflows/${id}`, linear('Second edit'), {
      headers: { 'If-Match': 'W/"2"' },
    });
    expect(fresh.body).toMatchObject({ version: 3, name: 'Second edit' });
    // Without a base version, the save applies to whatever is current.
    expect((await alice.put(`/api/builder/workflows/${id}`, linear('Blind edit'))).body).toMatchObject({ version: 4 });
    expect(
      (await alice.put(`/api/builder/workflows/${id}`, linear('x'), { headers: { 'If-Match': 'banana' } })).status,
    ).toBe(400);
  });

  it('lets only one of two concurrent saves based on the same version win', async () => {
    const { alice } = await setUp();
    const { workflow_id: id } = await create(alice);
    const results = await Promise.all(
      ['One', 'Two', 'Three'].map((name) => alice.put(`/api/builder/workflows/${id}`, { ...linear(name), version: 1 })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    expect((await alice.get<Json[]>(`/api/builder/workflows/${id}/versions`)).body).toHaveLength(2);
  });

  it("rolls back by saving the chosen version's content as a new version; history is never rewritten", async () => {
    const { alice } = await setUp();
    const created = await create(alice);
    const id = created.workflow_id;
    await alice.put(`/api/builder/workflows/${id}`, linear('Replaced'));
    const back = await alice.post(`/api/builder/workflows/${id}/rollback`, { version: 1 });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ version: 3, name: 'Reviewed research' });
    expect(back.body.nodes).toEqual(created.nodes);
    expect(back.body.edges).toEqual(created.edges);

    const versions = await alice.get<Json[]>(`/api/builder/workflows/${id}/versions`);
    expect(versions.body.map((v) => [v.version, v.source, v.restored_from])).toEqual([
      [3, 'rollback', 1],
      [2, 'update', null],
      [1, 'create', null],
    ]);
    expect(((await alice.get(`/api/builder/workflows/${id}/versions/2`)).body.workflow as Json).name).toBe('Replaced');
    expect((await alice.post(`/api/builder/workflows/${id}/rollback`, { version: 7 })).status).toBe(404);
    expect((await alice.post(`/api/builder/workflows/${id}/rollback`, {})).status).toBe(400);
  });

  it('diffs two versions node by node and field by field', async () => {
    const { alice } = await setUp();
    const { workflow_id: id } = await create(alice);
    const edited = reviewedResearch('Renamed');
    (edited.nodes[1]!.data as Json).system_prompt = 'Answer in one sentence.';
    edited.nodes = edited.nodes.filter((n) => n.id !== 'lookup');
    edited.edges = edited.edges.filter((e) => e.id !== 'e3' && e.id !== 'e5');
    edited.edges.push({ id: 'e9', source: 'needs_search', target: 'end', label: 'skip', data: { condition: 'false' } });
    await alice.put(`/api/builder/workflows/${id}`, edited);

    const diff = await alice.get(`/api/builder/workflows/${id}/diff?from=1&to=2`);
    expect(diff.status).toBe(200);
    expect(diff.body).toMatchObject({ from: 1, to: 2, unchanged: false, layout_only: false });
    expect(diff.body.fields).toContainEqual({ path: 'name', before: 'Reviewed research', after: 'Renamed' });
    const nodes = diff.body.nodes as { added: Json[]; removed: Json[]; changed: Json[] };
    expect(nodes.removed.map((n) => n.id)).toEqual(['lookup']);
    expect(nodes.changed).toContainEqual({
      id: 'research',
      changes: [{ path: 'data.system_prompt', before: 'Answer briefly.', after: 'Answer in one sentence.' }],
    });
    const edges = diff.body.edges as { added: Json[]; removed: Json[] };
    expect(edges.added.map((e) => e.id)).toEqual(['e9']);
    expect(edges.removed.map((e) => e.id).sort()).toEqual(['e3', 'e5']);

    // `to` defaults to the current version; a version against itself is unchanged.
    expect((await alice.get(`/api/builder/workflows/${id}/diff?from=2`)).body).toMatchObject({ unchanged: true });
    expect((await alice.get(`/api/builder/workflows/${id}/diff?from=1&to=5`)).status).toBe(404);
  });
});

describe('validate, generate, tools and resources', () => {
  it('validates without saving: errors name nodes and edges, warnings do not block', async () => {
    const { alice } = await setUp();
    const draft = linear();
    draft.nodes.push({ id: 'lonely', type: 'agent', position: { x: 0, y: 300 }, data: {} as never });
    const ok = await alice.post('/api/builder/validate', draft);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ valid: true, errors: [] });
    expect(ok.body.warnings).toContainEqual(expect.objectContaining({ code: 'unused_node', node_id: 'lonely' }));

    const bad = await alice.post('/api/builder/validate', {
      nodes: draft.nodes,
      edges: [...draft.edges, { id: 'e3', source: 'answer', target: 'nowhere' }],
    });
    expect(bad.status).toBe(200);
    expect(bad.body.valid).toBe(false);
    expect(bad.body.errors).toContainEqual(expect.objectContaining({ code: 'dangling_edge', edge_id: 'e3' }));
    expect((await alice.get('/api/builder/workflows')).body).toEqual([]);
  });

  it('generates Python and TypeScript with the workflow’s node names; refuses an invalid workflow', async () => {
    const { alice } = await setUp();
    const python = await alice.post('/api/builder/generate', { ...reviewedResearch('Research flow'), options: {} });
    expect(python.status).toBe(200);
    expect(python.body).toMatchObject({ language: 'python', filename: expect.stringMatching(/\.py$/) as unknown });
    for (const id of ['research', 'needs_search', 'lookup', 'review', 'decide'])
      expect(python.body.code as string).toContain(`"${id}"`);

    const ts = await alice.post('/api/builder/generate', {
      ...reviewedResearch('Research flow'),
      options: { language: 'typescript' },
    });
    expect(ts.body).toMatchObject({ language: 'typescript', filename: expect.stringMatching(/\.ts$/) as unknown });
    expect(ts.body.code as string).toContain('@langchain/langgraph');

    const broken = linear();
    broken.edges = [];
    const refused = await alice.post('/api/builder/generate', { ...broken, options: { language: 'python' } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'WORKFLOW_INVALID' });
    expect((await alice.post('/api/builder/generate', { ...linear(), options: { language: 'cobol' } })).status).toBe(
      400,
    );
  });

  it('lists the tools the caller may use in workflows, with their input schemas, and the resources', async () => {
    const { alice } = await setUp();
    const tools = await alice.get<Json[]>('/api/builder/tools');
    expect(tools.status).toBe(200);
    const names = tools.body.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['search_web', 'conversation_search', 'conversation_get']));
    // The tools that run the agent themselves are not workflow steps.
    expect(names).not.toContain('agent_chat');
    expect(tools.body.find((t) => t.name === 'search_web')).toMatchObject({
      input_schema: { type: 'object', properties: { query: expect.any(Object) as unknown } },
    });

    const resources = await alice.get<Json[]>('/api/builder/resources');
    expect(resources.status).toBe(200);
    expect(resources.body).toContainEqual(expect.objectContaining({ uri: 'agent-service://server' }));
  });
});
