import { describe, expect, it } from 'vitest';
import { type WorkflowDiff, WorkflowDiffSchema, diffWorkflows } from '../../workflows/diff.js';
import { type Workflow, parseWorkflow } from '../../workflows/schema.js';

/** What changed between two versions of a workflow, matched by node and edge id. */

const base = (): Record<string, unknown> & { nodes: Record<string, unknown>[]; edges: Record<string, unknown>[] } => ({
  name: 'Research flow',
  description: 'Looks things up',
  tags: ['research'],
  nodes: [
    { id: 'start', type: 'start', position: { x: 0, y: 0 } },
    {
      id: 'agent',
      type: 'agent',
      position: { x: 200, y: 0 },
      data: { label: 'Agent', system_prompt: 'Be brief.', tools: ['search_web'] },
    },
    { id: 'router', type: 'router', position: { x: 400, y: 0 } },
    {
      id: 'search',
      type: 'tool',
      position: { x: 600, y: 0 },
      data: { tool: 'search_web', args: { query: '{{ question }}', options: { limit: 3, lang: 'en' } } },
    },
    { id: 'end', type: 'end', position: { x: 800, y: 0 } },
  ],
  edges: [
    { id: 'e1', source: 'start', target: 'agent' },
    { id: 'e2', source: 'agent', target: 'router' },
    { id: 'e3', source: 'router', target: 'search', data: { condition: 'needs_tool' } },
    { id: 'e4', source: 'router', target: 'end' },
    { id: 'e5', source: 'search', target: 'agent' },
  ],
});

const parse = (input: unknown): Workflow => parseWorkflow(input);

/** A copy of the base workflow with `edit` applied to its raw JSON. */
function edited(edit: (w: ReturnType<typeof base>) => void): Workflow {
  const w = base();
  edit(w);
  return parse(w);
}

const node = (w: ReturnType<typeof base>, id: string): Record<string, unknown> => {
  const found = w.nodes.find((n) => n['id'] === id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
};

const nothing: WorkflowDiff = {
  fields: [],
  nodes: { added: [], removed: [], changed: [] },
  edges: { added: [], removed: [], changed: [] },
  layout_only: false,
  unchanged: true,
};

describe('diffWorkflows', () => {
  it('two equal versions are unchanged', () => {
    expect(diffWorkflows(parse(base()), parse(base()))).toEqual(nothing);
  });

  it('reports added nodes and edges in the order of the newer version, removed ones in the older order', () => {
    const before = parse(base());
    const after = edited((w) => {
      w.nodes.splice(1, 0, { id: 'review', type: 'human', data: { question: 'OK?' } });
      w.nodes.push({ id: 'log', type: 'tool', data: { tool: 'log' } });
      w.nodes = w.nodes.filter((n) => n['id'] !== 'search');
      w.edges = w.edges.filter((e) => e['id'] !== 'e3' && e['id'] !== 'e5');
      w.edges.unshift({ id: 'e0', source: 'router', target: 'review', data: { condition: 'unsure' } });
    });
    const diff = diffWorkflows(before, after);
    expect(diff.nodes.added.map((n) => n.id)).toEqual(['review', 'log']);
    expect(diff.nodes.added[0]).toEqual({ id: 'review', type: 'human', data: { question: 'OK?' } });
    expect(diff.nodes.removed.map((n) => n.id)).toEqual(['search']);
    expect(diff.nodes.changed).toEqual([]);
    expect(diff.edges.added).toEqual([{ id: 'e0', source: 'router', target: 'review', data: { condition: 'unsure' } }]);
    expect(diff.edges.removed.map((e) => e.id)).toEqual(['e3', 'e5']);
    expect(diff).toMatchObject({ layout_only: false, unchanged: false });
  });

  it('walks nested data to the leaves that changed, and compares arrays whole', () => {
    const before = parse(base());
    const after = edited((w) => {
      node(w, 'agent')['data'] = { label: 'Agent', system_prompt: 'Be thorough.', tools: ['search_web', 'fetch'] };
      node(w, 'search')['data'] = {
        tool: 'search_web',
        args: { query: '{{ question }}', options: { limit: 5, lang: 'en', safe: true } },
      };
    });
    expect(diffWorkflows(before, after).nodes.changed).toEqual([
      {
        id: 'agent',
        changes: [
          { path: 'data.system_prompt', before: 'Be brief.', after: 'Be thorough.' },
          { path: 'data.tools', before: ['search_web'], after: ['search_web', 'fetch'] },
        ],
      },
      {
        id: 'search',
        changes: [
          { path: 'data.args.options.limit', before: 3, after: 5 },
          { path: 'data.args.options.safe', before: undefined, after: true },
        ],
      },
    ]);
  });

  it('reports a removed field with nothing after it, and an object that appears whole', () => {
    const before = parse(base());
    const after = edited((w) => {
      node(w, 'agent')['data'] = { system_prompt: 'Be brief.', tools: ['search_web'] };
      delete node(w, 'end')['position'];
      node(w, 'router')['data'] = { label: 'Needs a tool?' };
    });
    const diff = diffWorkflows(before, after);
    expect(diff.nodes.changed).toEqual([
      { id: 'agent', changes: [{ path: 'data.label', before: 'Agent', after: undefined }] },
      { id: 'router', changes: [{ path: 'data.label', before: undefined, after: 'Needs a tool?' }] },
      { id: 'end', changes: [{ path: 'position', before: { x: 800, y: 0 }, after: undefined }] },
    ]);
  });

  it('reports a node whose type changed as changed, at the path type', () => {
    const before = parse(base());
    const after = edited((w) => {
      Object.assign(node(w, 'search'), { type: 'human', data: { question: 'Search for what?' } });
    });
    const diff = diffWorkflows(before, after);
    expect(diff.nodes.added).toEqual([]);
    expect(diff.nodes.removed).toEqual([]);
    expect(diff.nodes.changed).toHaveLength(1);
    expect(diff.nodes.changed[0]?.id).toBe('search');
    expect(diff.nodes.changed[0]?.changes[0]).toEqual({ path: 'type', before: 'tool', after: 'human' });
    expect(diff.nodes.changed[0]?.changes.map((c) => c.path)).toEqual([
      'type',
      'data.question',
      'data.tool',
      'data.args',
    ]);
  });

  it('reports edges whose ends or condition changed', () => {
    const before = parse(base());
    const after = edited((w) => {
      w.edges[2] = { id: 'e3', source: 'router', target: 'search', data: { condition: 'needs_tool && !done' } };
      w.edges[4] = { id: 'e5', source: 'search', target: 'end', label: 'finish' };
    });
    const diff = diffWorkflows(before, after);
    expect(diff.edges.changed).toEqual([
      { id: 'e3', changes: [{ path: 'data.condition', before: 'needs_tool', after: 'needs_tool && !done' }] },
      {
        id: 'e5',
        changes: [
          { path: 'target', before: 'agent', after: 'end' },
          { path: 'label', before: undefined, after: 'finish' },
        ],
      },
    ]);
    expect(diff.layout_only).toBe(false);
  });

  it('moving nodes only is a layout change', () => {
    const before = parse(base());
    const after = edited((w) => {
      node(w, 'agent')['position'] = { x: 250, y: 40 };
      node(w, 'end')['position'] = { x: 800, y: 90 };
    });
    const diff = diffWorkflows(before, after);
    expect(diff).toEqual({
      ...nothing,
      nodes: {
        added: [],
        removed: [],
        changed: [
          {
            id: 'agent',
            changes: [
              { path: 'position.x', before: 200, after: 250 },
              { path: 'position.y', before: 0, after: 40 },
            ],
          },
          { id: 'end', changes: [{ path: 'position.y', before: 0, after: 90 }] },
        ],
      },
      layout_only: true,
      unchanged: false,
    });
  });

  it('a move together with any other change is not layout only', () => {
    const before = parse(base());
    const moveAnd = (edit: (w: ReturnType<typeof base>) => void) =>
      diffWorkflows(
        before,
        edited((w) => {
          node(w, 'agent')['position'] = { x: 250, y: 40 };
          edit(w);
        }),
      );
    expect(moveAnd((w) => (node(w, 'router')['data'] = { label: 'Renamed' })).layout_only).toBe(false);
    expect(moveAnd((w) => (w['name'] = 'Renamed')).layout_only).toBe(false);
    expect(moveAnd((w) => w.edges.pop()).layout_only).toBe(false);
    expect(moveAnd((w) => (w.edges[0] = { id: 'e1', source: 'start', target: 'router' })).layout_only).toBe(false);
    expect(moveAnd(() => undefined).layout_only).toBe(true);
  });

  it('reports the name, description and tags, tags as a whole list', () => {
    const before = parse(base());
    const after = edited((w) => {
      w['name'] = 'Research flow v2';
      delete w['description'];
      w['tags'] = ['research', 'web'];
    });
    const diff = diffWorkflows(before, after);
    expect(diff.fields).toEqual([
      { path: 'name', before: 'Research flow', after: 'Research flow v2' },
      { path: 'description', before: 'Looks things up', after: '' },
      { path: 'tags', before: ['research'], after: ['research', 'web'] },
    ]);
    expect(diff).toMatchObject({ layout_only: false, unchanged: false });
    // The same tags in another order are a change: the list is compared as it is kept.
    expect(
      diffWorkflows(
        after,
        edited((w) => (w['tags'] = ['web', 'research'])),
      ).fields,
    ).toContainEqual({
      path: 'tags',
      before: ['research', 'web'],
      after: ['web', 'research'],
    });
  });

  it('matches the published diff schema', () => {
    const after = edited((w) => {
      w.nodes.push({ id: 'extra', type: 'agent', data: { system_prompt: 'x' } });
      node(w, 'agent')['position'] = { x: 1, y: 2 };
    });
    const diff = diffWorkflows(parse(base()), after);
    expect(WorkflowDiffSchema.parse(JSON.parse(JSON.stringify(diff)))).toEqual(JSON.parse(JSON.stringify(diff)));
  });
});
