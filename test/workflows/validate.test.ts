import { describe, expect, it } from 'vitest';
import { type Workflow, parseWorkflow } from '../../workflows/schema.js';
import {
  ISSUE_CODES,
  type IssueCode,
  type ToolCatalog,
  type ValidationIssue,
  ValidationReportSchema,
  validateWorkflow,
} from '../../workflows/validate.js';

/** What `validateWorkflow` reports about a workflow's sense, beyond the shape the schema checks. */

type NodeSpec = { id: string; type: string; data?: Record<string, unknown> };
type EdgeSpec = { id: string; source: string; target: string; data?: { condition?: string } };

const start = { id: 'start', type: 'start' };
const end = { id: 'end', type: 'end' };
const agent = (id: string, data: Record<string, unknown> = { system_prompt: 'Be brief.' }): NodeSpec => ({
  id,
  type: 'agent',
  data,
});
const router = (id: string): NodeSpec => ({ id, type: 'router' });
const tool = (id: string, data: Record<string, unknown>): NodeSpec => ({ id, type: 'tool', data });
const human = (id: string, data: Record<string, unknown> = { question: 'Approve?' }): NodeSpec => ({
  id,
  type: 'human',
  data,
});
const edge = (id: string, source: string, target: string, condition?: string): EdgeSpec =>
  condition === undefined ? { id, source, target } : { id, source, target, data: { condition } };

const workflow = (nodes: NodeSpec[], edges: EdgeSpec[]): Workflow => parseWorkflow({ name: 'Test', nodes, edges });

const catalog = (known: string[], permitted: string[] = known): ToolCatalog => ({
  known: new Set(known),
  permitted: new Set(permitted),
});

/** The example of the interchange format's documentation, as it is written there. */
const documented = {
  name: 'Research flow',
  description: 'optional',
  tags: ['research'],
  schema_version: 1,
  nodes: [
    { id: 'start', type: 'start', position: { x: 0, y: 0 }, data: { label: 'Start' } },
    {
      id: 'agent',
      type: 'agent',
      position: { x: 200, y: 0 },
      data: { label: 'Agent', system_prompt: 'You are…', model: 'optional', tools: ['search_web'] },
    },
    { id: 'router', type: 'router', position: { x: 400, y: 0 }, data: { label: 'Needs a tool?' } },
    {
      id: 'search',
      type: 'tool',
      position: { x: 600, y: -100 },
      data: { label: 'Search', tool: 'search_web', args: { query: '{{state.question}}' } },
    },
    {
      id: 'review',
      type: 'human',
      position: { x: 600, y: 100 },
      data: { label: 'Review', question: 'Approve?' },
    },
    { id: 'end', type: 'end', position: { x: 800, y: 0 }, data: { label: 'End' } },
  ],
  edges: [
    { id: 'e1', source: 'start', target: 'agent' },
    { id: 'e2', source: 'agent', target: 'router' },
    { id: 'e3', source: 'router', target: 'search', label: 'tool', data: { condition: 'needs_tool' } },
    { id: 'e4', source: 'router', target: 'end', label: 'done' },
  ],
};

const codes = (issues: ValidationIssue[]): IssueCode[] => issues.map((i) => i.code);

describe('valid workflows', () => {
  it('the documented example is valid once its tool node leads on (there it is a dead end)', () => {
    const asDocumented = validateWorkflow(parseWorkflow(documented), { tools: catalog(['search_web']) });
    expect(asDocumented.errors).toEqual([expect.objectContaining({ code: 'missing_outgoing', node_id: 'search' })]);

    const completed = parseWorkflow({
      ...documented,
      edges: [...documented.edges, { id: 'e5', source: 'search', target: 'end' }],
    });
    const report = validateWorkflow(completed, { tools: catalog(['search_web']) });
    expect(report.errors).toEqual([]);
    expect(report.valid).toBe(true);
    // The human node is drawn but not connected: allowed, and pointed out.
    expect(report.warnings).toEqual([
      expect.objectContaining({ code: 'unused_node', node_id: 'review', severity: 'warning' }),
    ]);
  });

  it('a loop through a router, with a human step, has no errors and no warnings', () => {
    const looping = workflow(
      [
        start,
        agent('plan'),
        router('check'),
        tool('search', { tool: 'search_web', args: { query: '{{ plan }}', limit: 3 } }),
        human('review'),
        end,
      ],
      [
        edge('e1', 'start', 'plan'),
        edge('e2', 'plan', 'check'),
        edge('e3', 'check', 'search', 'plan contains "search"'),
        edge('e4', 'check', 'review', 'not approved'),
        edge('e5', 'check', 'end'),
        edge('e6', 'search', 'plan'),
        edge('e7', 'review', 'plan'),
      ],
    );
    expect(validateWorkflow(looping, { tools: catalog(['search_web']) })).toEqual({
      valid: true,
      errors: [],
      warnings: [],
    });
  });

  it('the smallest workflow, start to end, is valid', () => {
    expect(validateWorkflow(workflow([start, end], [edge('e1', 'start', 'end')])).valid).toBe(true);
  });
});

interface Case {
  code: IssueCode;
  name: string;
  workflow: Workflow;
  tools?: ToolCatalog;
  /** Every error the workflow has, in report order. */
  errors: IssueCode[];
  /** Every warning the workflow has, in report order. */
  warnings?: IssueCode[];
  /** The issues of `code`, in order, each matched on the fields given. */
  issues: Partial<ValidationIssue>[];
}

const cases: Case[] = [
  {
    code: 'duplicate_node_id',
    name: 'two nodes share an id',
    workflow: workflow([start, agent('a'), agent('a'), end], [edge('e1', 'start', 'a'), edge('e2', 'a', 'end')]),
    errors: ['duplicate_node_id'],
    issues: [{ node_id: 'a' }],
  },
  {
    code: 'duplicate_edge_id',
    name: 'two edges share an id',
    workflow: workflow([start, agent('a'), end], [edge('e1', 'start', 'a'), edge('e1', 'a', 'end')]),
    errors: ['duplicate_edge_id'],
    issues: [{ edge_id: 'e1' }],
  },
  {
    code: 'reserved_node_id',
    name: 'an agent named like the run state',
    workflow: workflow([start, agent('output'), end], [edge('e1', 'start', 'output'), edge('e2', 'output', 'end')]),
    errors: ['reserved_node_id'],
    issues: [{ node_id: 'output' }],
  },
  {
    code: 'missing_start',
    name: 'no start node',
    workflow: workflow([agent('a'), end], [edge('e1', 'a', 'end')]),
    errors: ['missing_start'],
    issues: [{ message: 'The workflow has no start node: add one where runs begin.' }],
  },
  {
    code: 'multiple_starts',
    name: 'a second start node',
    workflow: workflow(
      [start, { id: 's2', type: 'start' }, end],
      [edge('e1', 'start', 'end'), edge('e2', 's2', 'end')],
    ),
    errors: ['multiple_starts'],
    issues: [{ node_id: 's2' }],
  },
  {
    code: 'missing_end',
    name: 'no end node',
    workflow: workflow([start, agent('a')], [edge('e1', 'start', 'a')]),
    errors: ['missing_end', 'missing_outgoing'],
    issues: [{ message: 'The workflow has no end node: add one where runs finish.' }],
  },
  {
    code: 'dangling_edge',
    name: 'edges from and to nodes that do not exist',
    workflow: workflow(
      [start, agent('a'), end],
      [edge('e1', 'start', 'a'), edge('e2', 'a', 'end'), edge('e3', 'ghost', 'end'), edge('e4', 'a', 'ghost')],
    ),
    errors: ['dangling_edge', 'dangling_edge', 'multiple_outgoing'],
    issues: [
      { edge_id: 'e3', field: 'source' },
      { edge_id: 'e4', field: 'target' },
    ],
  },
  {
    code: 'edge_into_start',
    name: 'a router branch back into the start',
    workflow: workflow(
      [start, router('r'), end],
      [edge('e1', 'start', 'r'), edge('e2', 'r', 'end'), edge('e3', 'r', 'start', 'again')],
    ),
    errors: ['edge_into_start'],
    issues: [{ edge_id: 'e3', node_id: 'start' }],
  },
  {
    code: 'edge_from_end',
    name: 'an edge leaving an end node',
    workflow: workflow(
      [start, end, agent('a'), { id: 'end2', type: 'end' }],
      [edge('e1', 'start', 'end'), edge('e2', 'end', 'a'), edge('e3', 'a', 'end2')],
    ),
    errors: ['edge_from_end'],
    issues: [{ edge_id: 'e2', node_id: 'end' }],
  },
  {
    code: 'multiple_outgoing',
    name: 'the start branching without a router',
    workflow: workflow(
      [start, agent('a'), end],
      [edge('e1', 'start', 'a'), edge('e2', 'start', 'end'), edge('e3', 'a', 'end')],
    ),
    errors: ['multiple_outgoing'],
    issues: [{ node_id: 'start' }],
  },
  {
    code: 'missing_outgoing',
    name: 'a branch that leads nowhere',
    workflow: workflow(
      [start, router('r'), agent('a'), end],
      [edge('e1', 'start', 'r'), edge('e2', 'r', 'a', 'x'), edge('e3', 'r', 'end')],
    ),
    errors: ['missing_outgoing'],
    issues: [{ node_id: 'a' }],
  },
  {
    code: 'condition_outside_router',
    name: 'a condition on an ordinary edge',
    workflow: workflow([start, end], [edge('e1', 'start', 'end', 'x')]),
    errors: ['condition_outside_router'],
    issues: [{ edge_id: 'e1', field: 'data.condition' }],
  },
  {
    code: 'router_without_branches',
    name: 'a router with only a default',
    workflow: workflow([start, router('r'), end], [edge('e1', 'start', 'r'), edge('e2', 'r', 'end')]),
    errors: ['router_without_branches'],
    issues: [{ node_id: 'r' }],
  },
  {
    code: 'router_without_default',
    name: 'a router whose every edge has a condition',
    workflow: workflow([start, router('r'), end], [edge('e1', 'start', 'r'), edge('e2', 'r', 'end', 'x')]),
    errors: ['router_without_default'],
    issues: [{ node_id: 'r', message: "The router 'r' has no default branch: add an edge without a condition." }],
  },
  {
    code: 'router_multiple_defaults',
    name: 'a router with two defaults (a blank condition counts as none)',
    workflow: workflow(
      [start, router('r'), agent('a'), end],
      [
        edge('e1', 'start', 'r'),
        edge('e2', 'r', 'a', 'x'),
        edge('e3', 'r', 'end'),
        edge('e4', 'r', 'end', '  '),
        edge('e5', 'a', 'end'),
      ],
    ),
    errors: ['router_multiple_defaults'],
    issues: [{ node_id: 'r', edge_id: 'e4' }],
  },
  {
    code: 'invalid_condition',
    name: 'a condition that does not parse',
    workflow: workflow(
      [start, router('r'), agent('a'), end],
      [edge('e1', 'start', 'r'), edge('e2', 'r', 'a', 'score =='), edge('e3', 'r', 'end'), edge('e4', 'a', 'end')],
    ),
    errors: ['invalid_condition'],
    issues: [
      {
        node_id: 'r',
        edge_id: 'e2',
        field: 'data.condition',
        message:
          "The condition of the edge 'e2' is not valid: Expected a value but found the end of the expression (at position 8).",
      },
    ],
  },
  {
    code: 'unreachable_node',
    name: 'a connected node no path from the start leads to',
    workflow: workflow([start, agent('a'), end], [edge('e1', 'start', 'end'), edge('e2', 'a', 'end')]),
    errors: ['unreachable_node'],
    issues: [{ node_id: 'a' }],
  },
  {
    code: 'cannot_reach_end',
    name: 'a loop through a router that never leads to the end',
    workflow: workflow(
      [start, agent('a'), router('r'), agent('b'), end],
      [
        edge('e1', 'start', 'a'),
        edge('e2', 'a', 'r'),
        edge('e3', 'r', 'a', 'x'),
        edge('e4', 'r', 'b'),
        edge('e5', 'b', 'a'),
      ],
    ),
    errors: ['cannot_reach_end', 'cannot_reach_end', 'cannot_reach_end', 'cannot_reach_end'],
    issues: [{ node_id: 'start' }, { node_id: 'a' }, { node_id: 'r' }, { node_id: 'b' }],
  },
  {
    code: 'cannot_reach_end',
    name: 'a start with no edge at all',
    workflow: workflow([start, end], []),
    errors: ['cannot_reach_end'],
    issues: [{ node_id: 'start' }],
  },
  {
    code: 'cycle_without_router',
    name: 'a loop of two agents, and an agent looping on itself',
    workflow: workflow(
      [start, router('r'), agent('a'), agent('b'), agent('c'), end],
      [
        edge('e1', 'start', 'r'),
        edge('e2', 'r', 'a', 'x'),
        edge('e3', 'r', 'c', 'y'),
        edge('e4', 'r', 'end'),
        edge('e5', 'a', 'b'),
        edge('e6', 'b', 'a'),
        edge('e7', 'c', 'c'),
      ],
    ),
    errors: [
      'cannot_reach_end',
      'cannot_reach_end',
      'cannot_reach_end',
      'cycle_without_router',
      'cycle_without_router',
    ],
    issues: [
      { node_id: 'a', message: expect.stringContaining("The nodes 'a', 'b' form a loop without a router") as string },
      { node_id: 'c', message: expect.stringContaining("The nodes 'c' form a loop") as string },
    ],
  },
  {
    code: 'tool_missing',
    name: 'a tool node that names no tool',
    workflow: workflow([start, tool('t', {}), end], [edge('e1', 'start', 't'), edge('e2', 't', 'end')]),
    errors: ['tool_missing'],
    issues: [{ node_id: 't', field: 'data.tool' }],
  },
  {
    code: 'unknown_tool',
    name: 'tools the catalog does not know, on a tool node and an agent',
    workflow: workflow(
      [start, agent('a', { system_prompt: 'x', tools: ['search', 'nope'] }), tool('t', { tool: 'gone' }), end],
      [edge('e1', 'start', 'a'), edge('e2', 'a', 't'), edge('e3', 't', 'end')],
    ),
    tools: catalog(['search']),
    errors: ['unknown_tool', 'unknown_tool'],
    issues: [
      { node_id: 'a', field: 'data.tools', message: expect.stringContaining("'nope'") as string },
      { node_id: 't', field: 'data.tool', message: expect.stringContaining("'gone'") as string },
    ],
  },
  {
    code: 'tool_not_permitted',
    name: 'known tools the caller may not use',
    workflow: workflow(
      [start, agent('a', { system_prompt: 'x', tools: ['delete'] }), tool('t', { tool: 'delete' }), end],
      [edge('e1', 'start', 'a'), edge('e2', 'a', 't'), edge('e3', 't', 'end')],
    ),
    tools: catalog(['search', 'delete'], ['search']),
    errors: ['tool_not_permitted', 'tool_not_permitted'],
    issues: [
      { node_id: 'a', field: 'data.tools' },
      { node_id: 't', field: 'data.tool' },
    ],
  },
  {
    code: 'invalid_template',
    name: 'argument templates that do not parse, at any depth',
    workflow: workflow(
      [
        start,
        tool('t', {
          tool: 'search',
          args: { query: 'Find {{ topic', fine: '{{ topic }}', nested: { list: ['ok', '{{ a = 1 }}'] } },
        }),
        end,
      ],
      [edge('e1', 'start', 't'), edge('e2', 't', 'end')],
    ),
    errors: ['invalid_template', 'invalid_template'],
    issues: [
      { node_id: 't', field: 'data.args.query', message: expect.stringContaining('(at position 5)') as string },
      { node_id: 't', field: 'data.args.nested.list.1' },
    ],
  },
  {
    code: 'unused_node',
    name: 'a node with no edges',
    workflow: workflow([start, agent('a'), end], [edge('e1', 'start', 'end')]),
    errors: [],
    warnings: ['unused_node'],
    issues: [{ node_id: 'a', severity: 'warning' }],
  },
  {
    code: 'unreachable_branch',
    name: 'a branch that is false, and one that repeats an earlier condition',
    workflow: workflow(
      [start, router('r'), agent('a'), agent('b'), agent('c'), end],
      [
        edge('e1', 'start', 'r'),
        edge('e2', 'r', 'a', 'false'),
        edge('e3', 'r', 'b', 'score > 3'),
        edge('e4', 'r', 'c', ' score > 3 '),
        edge('e5', 'r', 'end'),
        edge('e6', 'a', 'end'),
        edge('e7', 'b', 'end'),
        edge('e8', 'c', 'end'),
      ],
    ),
    errors: [],
    warnings: ['unreachable_branch', 'unreachable_branch'],
    issues: [
      { node_id: 'r', edge_id: 'e2', severity: 'warning' },
      { node_id: 'r', edge_id: 'e4', severity: 'warning' },
    ],
  },
  {
    code: 'empty_system_prompt',
    name: 'an agent without instructions',
    workflow: workflow(
      [start, agent('a', { system_prompt: '  ' }), end],
      [edge('e1', 'start', 'a'), edge('e2', 'a', 'end')],
    ),
    errors: [],
    warnings: ['empty_system_prompt'],
    issues: [{ node_id: 'a', field: 'data.system_prompt', severity: 'warning' }],
  },
  {
    code: 'missing_question',
    name: 'a human node without a question',
    workflow: workflow([start, human('h', {}), end], [edge('e1', 'start', 'h'), edge('e2', 'h', 'end')]),
    errors: [],
    warnings: ['missing_question'],
    issues: [{ node_id: 'h', field: 'data.question', severity: 'warning' }],
  },
];

describe('each rule', () => {
  it('every issue code has a case below', () => {
    expect(new Set(cases.map((c) => c.code))).toEqual(new Set(ISSUE_CODES));
  });

  it.each(cases)('$code: $name', ({ code, workflow: w, tools, errors, warnings = [], issues }) => {
    const report = validateWorkflow(w, tools ? { tools } : {});
    expect(codes(report.errors)).toEqual(errors);
    expect(codes(report.warnings)).toEqual(warnings);
    expect(report.valid).toBe(errors.length === 0);
    const found = [...report.errors, ...report.warnings].filter((i) => i.code === code);
    expect(found).toEqual(issues.map((expected) => expect.objectContaining(expected) as unknown));
    for (const issue of found) expect(issue.message).toMatch(/^[A-Z].*[.!]$/);
  });
});

describe('the report', () => {
  it('does not check tool names without a catalog, but still requires a tool', () => {
    const w = workflow(
      [
        start,
        agent('a', { system_prompt: 'x', tools: ['anything'] }),
        tool('t', { tool: 'whatever' }),
        tool('u', {}),
        end,
      ],
      [edge('e1', 'start', 'a'), edge('e2', 'a', 't'), edge('e3', 't', 'u'), edge('e4', 'u', 'end')],
    );
    expect(codes(validateWorkflow(w).errors)).toEqual(['tool_missing']);
    expect(codes(validateWorkflow(w, { tools: catalog([]) }).errors)).toEqual([
      'tool_missing',
      'unknown_tool',
      'unknown_tool',
    ]);
  });

  it('lists issues by rule, then in the order of nodes and edges, the same way every time', () => {
    const w = workflow(
      [
        human('h2', {}),
        agent('z', {}),
        start,
        agent('output'),
        tool('t', {}),
        human('h1', {}),
        end,
        { id: 's2', type: 'start' },
      ],
      [
        edge('e1', 'start', 'z'),
        edge('e2', 'z', 't'),
        edge('e3', 't', 'output'),
        edge('e4', 'output', 'end'),
        edge('e5', 'end', 'h1'),
        edge('e6', 'h1', 'end'),
        edge('e7', 'h2', 'end', 'x'),
      ],
    );
    const report = validateWorkflow(w);
    const summary = (issues: ValidationIssue[]) => issues.map((i) => `${i.code}:${i.node_id ?? ''}:${i.edge_id ?? ''}`);
    expect(summary(report.errors)).toEqual([
      'reserved_node_id:output:',
      'multiple_starts:s2:',
      'edge_from_end:end:e5',
      'condition_outside_router::e7',
      'cycle_without_router:h1:',
      'tool_missing:t:',
    ]);
    expect(summary(report.warnings)).toEqual([
      'empty_system_prompt:z:',
      'missing_question:h2:',
      'missing_question:h1:',
    ]);
    expect(validateWorkflow(w)).toEqual(report);
  });

  it('matches the published report schema', () => {
    const report = validateWorkflow(workflow([start, agent('a', {})], [edge('e1', 'start', 'a')]));
    expect(ValidationReportSchema.parse(report)).toEqual(report);
    expect(report.errors.every((i) => i.severity === 'error')).toBe(true);
    expect(report.warnings.every((i) => i.severity === 'warning')).toBe(true);
  });
});
