import { z } from 'zod';
import { type Expr, parseExpression, parseTemplate } from './expression.js';
import {
  type AgentNode,
  type HumanNode,
  RESERVED_IDS,
  type Workflow,
  type WorkflowEdge,
  type WorkflowNode,
  conditionOf,
  systemPromptOf,
} from './schema.js';

/**
 * Whether a workflow makes sense, beyond its shape: one start, ends that can be reached, routers with a default,
 * conditions and templates that parse, tools that exist. The builder shows the report while a workflow is drawn,
 * and runs, exports and code generation refuse a workflow with errors. Warnings point at things that are allowed but
 * probably not meant.
 */

/** Every issue code, in the order the report lists them. Clients may switch on them; their meaning never changes. */
export const ISSUE_CODES = [
  'duplicate_node_id',
  'duplicate_edge_id',
  'reserved_node_id',
  'missing_start',
  'multiple_starts',
  'missing_end',
  'dangling_edge',
  'edge_into_start',
  'edge_from_end',
  'multiple_outgoing',
  'missing_outgoing',
  'condition_outside_router',
  'router_without_branches',
  'router_without_default',
  'router_multiple_defaults',
  'invalid_condition',
  'unreachable_node',
  'cannot_reach_end',
  'cycle_without_router',
  'tool_missing',
  'unknown_tool',
  'tool_not_permitted',
  'invalid_template',
  'unused_node',
  'unreachable_branch',
  'empty_system_prompt',
  'missing_question',
] as const;
export type IssueCode = (typeof ISSUE_CODES)[number];

const WARNINGS: ReadonlySet<IssueCode> = new Set([
  'unused_node',
  'unreachable_branch',
  'empty_system_prompt',
  'missing_question',
]);

export type Severity = 'error' | 'warning';

export interface ValidationIssue {
  code: IssueCode;
  message: string;
  severity: Severity;
  node_id?: string;
  edge_id?: string;
  /** The field at fault, as a dotted path in the node or edge (`data.condition`, `data.args.query`). */
  field?: string;
}

export interface ValidationReport {
  /** No errors; warnings do not count. */
  valid: boolean;
  errors: ValidationIssue[];
  warnings: ValidationIssue[];
}

/** The tools the caller's MCP server offers (`known`) and those the caller may use (`permitted`). */
export interface ToolCatalog {
  known: ReadonlySet<string>;
  permitted: ReadonlySet<string>;
}

const IssueSchema = z
  .object({
    code: z.enum(ISSUE_CODES),
    message: z.string().describe('A sentence for people; its wording may change, the code does not'),
    severity: z.enum(['error', 'warning']),
    node_id: z.string().optional().describe('The node at fault'),
    edge_id: z.string().optional().describe('The edge at fault'),
    field: z.string().optional().describe('The field at fault, as a dotted path in the node or edge'),
  })
  .meta({ id: 'WorkflowValidationIssue' });

/** The report as the API answers it. */
export const ValidationReportSchema = z
  .object({
    valid: z.boolean().describe('True when there are no errors; warnings do not count'),
    errors: z.array(IssueSchema),
    warnings: z.array(IssueSchema),
  })
  .meta({ id: 'WorkflowValidationReport' });

type Found = Omit<ValidationIssue, 'severity'>;

/** The facts every rule reads, worked out once. Graph rules see each node id once (its first node). */
interface Graph {
  workflow: Workflow;
  nodes: WorkflowNode[];
  byId: Map<string, WorkflowNode>;
  /** Edges whose source and target both exist. */
  edges: WorkflowEdge[];
  outgoing: Map<string, WorkflowEdge[]>;
  /** Ids of nodes some edge (even a dangling one) touches. */
  touched: Set<string>;
  starts: WorkflowNode[];
  ends: WorkflowNode[];
}

function graphOf(workflow: Workflow): Graph {
  const byId = new Map<string, WorkflowNode>();
  for (const n of workflow.nodes) if (!byId.has(n.id)) byId.set(n.id, n);
  const nodes = [...byId.values()];
  const edges = workflow.edges.filter((e) => byId.has(e.source) && byId.has(e.target));
  const outgoing = new Map<string, WorkflowEdge[]>(nodes.map((n) => [n.id, []]));
  for (const e of workflow.edges) outgoing.get(e.source)?.push(e);
  const touched = new Set(workflow.edges.flatMap((e) => [e.source, e.target]));
  return {
    workflow,
    nodes,
    byId,
    edges,
    outgoing,
    touched,
    starts: workflow.nodes.filter((n) => n.type === 'start'),
    ends: nodes.filter((n) => n.type === 'end'),
  };
}

const outgoingOf = (g: Graph, id: string): WorkflowEdge[] => g.outgoing.get(id) ?? [];

/** Ids reachable from `from` through at least one edge (so `from` is in it only when it lies on a cycle). */
function reachableFrom(g: Graph, from: string): Set<string> {
  const seen = new Set<string>();
  const queue = [from];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    for (const e of g.edges) {
      if (e.source === id && !seen.has(e.target)) {
        seen.add(e.target);
        queue.push(e.target);
      }
    }
  }
  return seen;
}

const KIND: Record<WorkflowNode['type'], string> = {
  start: 'start node',
  agent: 'agent',
  router: 'router',
  tool: 'tool node',
  human: 'human node',
  end: 'end node',
};
/** How messages name a node: `the router 'r1'`, and `The router 'r1'` to open a sentence. */
const nameOf = (n: WorkflowNode): string => `the ${KIND[n.type]} '${n.id}'`;
const named = (n: WorkflowNode): string => `The ${KIND[n.type]} '${n.id}'`;

type Rule = (g: Graph, tools: ToolCatalog | undefined) => Found[];

const duplicateIds: Rule = ({ workflow }) => {
  const issues: Found[] = [];
  const nodeIds = new Set<string>();
  for (const n of workflow.nodes) {
    if (nodeIds.has(n.id)) {
      issues.push({
        code: 'duplicate_node_id',
        node_id: n.id,
        message: `Two nodes have the id '${n.id}': rename one.`,
      });
    }
    nodeIds.add(n.id);
  }
  const edgeIds = new Set<string>();
  for (const e of workflow.edges) {
    if (edgeIds.has(e.id)) {
      issues.push({
        code: 'duplicate_edge_id',
        edge_id: e.id,
        message: `Two edges have the id '${e.id}': rename one.`,
      });
    }
    edgeIds.add(e.id);
  }
  return issues;
};

const RESERVED: ReadonlySet<string> = new Set(RESERVED_IDS);

const reservedIds: Rule = ({ nodes }) =>
  nodes
    .filter((n) => (n.type === 'agent' || n.type === 'tool' || n.type === 'human') && RESERVED.has(n.id))
    .map((n) => ({
      code: 'reserved_node_id',
      node_id: n.id,
      message: `${named(n)} uses a name the run state keeps for itself: choose another id (not ${RESERVED_IDS.join(', ')}).`,
    }));

const startsAndEnds: Rule = ({ starts, ends }) => {
  const issues: Found[] = [];
  if (starts.length === 0) {
    issues.push({ code: 'missing_start', message: 'The workflow has no start node: add one where runs begin.' });
  }
  for (const n of starts.slice(1)) {
    issues.push({
      code: 'multiple_starts',
      node_id: n.id,
      message: `The workflow has more than one start node: remove '${n.id}'.`,
    });
  }
  if (ends.length === 0) {
    issues.push({ code: 'missing_end', message: 'The workflow has no end node: add one where runs finish.' });
  }
  return issues;
};

const edgeEnds: Rule = ({ workflow, byId }) =>
  workflow.edges.flatMap((e): Found[] => {
    const issues: Found[] = [];
    for (const field of ['source', 'target'] as const) {
      if (!byId.has(e[field])) {
        issues.push({
          code: 'dangling_edge',
          edge_id: e.id,
          field,
          message: `The edge '${e.id}' has the ${field} '${e[field]}', which is not a node: reconnect or remove it.`,
        });
      }
    }
    const source = byId.get(e.source);
    const target = byId.get(e.target);
    if (target?.type === 'start') {
      issues.push({
        code: 'edge_into_start',
        edge_id: e.id,
        node_id: target.id,
        message: `The edge '${e.id}' leads into the start node: runs only begin there.`,
      });
    }
    if (source?.type === 'end') {
      issues.push({
        code: 'edge_from_end',
        edge_id: e.id,
        node_id: source.id,
        message: `The edge '${e.id}' leaves the end node '${source.id}': runs stop there.`,
      });
    }
    return issues;
  });

const outgoingCounts: Rule = (g) =>
  g.nodes.flatMap((n): Found[] => {
    const count = outgoingOf(g, n.id).length;
    if (n.type !== 'router' && n.type !== 'end' && count > 1) {
      return [
        {
          code: 'multiple_outgoing',
          node_id: n.id,
          message: `${named(n)} has ${count} outgoing edges: only a router may branch, so keep one or add a router.`,
        },
      ];
    }
    if (n.type !== 'end' && count === 0 && g.touched.has(n.id)) {
      return [
        {
          code: 'missing_outgoing',
          node_id: n.id,
          message: `${named(n)} has no outgoing edge: connect it to the next step or to an end node.`,
        },
      ];
    }
    return [];
  });

const conditionsOutsideRouters: Rule = ({ workflow, byId }) =>
  workflow.edges
    .filter((e) => conditionOf(e) !== undefined && byId.has(e.source) && byId.get(e.source)?.type !== 'router')
    .map((e) => ({
      code: 'condition_outside_router',
      edge_id: e.id,
      field: 'data.condition',
      message: `The edge '${e.id}' has a condition but does not leave a router: only router branches have conditions.`,
    }));

const routers: Rule = (g) => {
  const issues: Found[] = [];
  for (const n of g.nodes.filter((r) => r.type === 'router')) {
    const out = outgoingOf(g, n.id);
    if (out.length === 0) continue;
    const defaults = out.filter((e) => conditionOf(e) === undefined);
    if (defaults.length === out.length) {
      issues.push({
        code: 'router_without_branches',
        node_id: n.id,
        message: `${named(n)} has no branch with a condition: add a condition to one of its edges.`,
      });
    }
    if (defaults.length === 0) {
      issues.push({
        code: 'router_without_default',
        node_id: n.id,
        message: `${named(n)} has no default branch: add an edge without a condition.`,
      });
    }
    for (const e of defaults.slice(1)) {
      issues.push({
        code: 'router_multiple_defaults',
        node_id: n.id,
        edge_id: e.id,
        message: `${named(n)} has more than one default branch: give the edge '${e.id}' a condition or remove it.`,
      });
    }
    for (const e of out) {
      const condition = conditionOf(e);
      if (condition === undefined) continue;
      const parsed = parseExpression(condition);
      if (!parsed.ok) {
        issues.push({
          code: 'invalid_condition',
          node_id: n.id,
          edge_id: e.id,
          field: 'data.condition',
          message: `The condition of the edge '${e.id}' is not valid: ${parsed.message} (at position ${parsed.position}).`,
        });
      }
    }
  }
  return issues;
};

/** Reachability from the one start, and to the ends. Without exactly one start there is nothing to measure from. */
const reachability: Rule = (g) => {
  const [start] = g.starts;
  if (!start || g.starts.length !== 1) return [];
  const reached = reachableFrom(g, start.id).add(start.id);
  const issues: Found[] = [];
  for (const n of g.nodes) {
    if (!reached.has(n.id) && g.touched.has(n.id)) {
      issues.push({
        code: 'unreachable_node',
        node_id: n.id,
        message: `${named(n)} cannot be reached from the start: connect an edge into it or remove it.`,
      });
    }
  }
  if (g.ends.length === 0) return issues;
  const ends = new Set(g.ends.map((n) => n.id));
  for (const n of g.nodes) {
    // A connected node without outgoing edges is reported as missing one; only an unconnected start is left here.
    const deadEnd = outgoingOf(g, n.id).length === 0 && g.touched.has(n.id);
    if (!reached.has(n.id) || n.type === 'end' || deadEnd) continue;
    if (![...reachableFrom(g, n.id)].some((id) => ends.has(id))) {
      issues.push({
        code: 'cannot_reach_end',
        node_id: n.id,
        message: `No end node can be reached from ${nameOf(n)}: runs going there never finish.`,
      });
    }
  }
  return issues;
};

/** Loops must pass through a router, or a run going round them would never stop. */
const cycles: Rule = (g) => {
  const reach = new Map(g.nodes.map((n) => [n.id, reachableFrom(g, n.id)]));
  const reported = new Set<string>();
  const issues: Found[] = [];
  for (const n of g.nodes) {
    if (reported.has(n.id) || !reach.get(n.id)?.has(n.id)) continue;
    const cycle = g.nodes.filter((m) => reach.get(n.id)?.has(m.id) && reach.get(m.id)?.has(n.id));
    for (const m of cycle) reported.add(m.id);
    if (cycle.some((m) => m.type === 'router')) continue;
    const ids = cycle.map((m) => `'${m.id}'`).join(', ');
    issues.push({
      code: 'cycle_without_router',
      node_id: n.id,
      message: `The nodes ${ids} form a loop without a router, so a run would never leave it: route the loop through a router.`,
    });
  }
  return issues;
};

function toolIssues(n: WorkflowNode, name: string, field: string, tools: ToolCatalog | undefined): Found[] {
  if (!tools) return [];
  if (!tools.known.has(name)) {
    return [
      {
        code: 'unknown_tool',
        node_id: n.id,
        field,
        message: `${named(n)} uses the tool '${name}', which does not exist: choose a tool from the list.`,
      },
    ];
  }
  if (!tools.permitted.has(name)) {
    return [
      {
        code: 'tool_not_permitted',
        node_id: n.id,
        field,
        message: `${named(n)} uses the tool '${name}', which you may not use.`,
      },
    ];
  }
  return [];
}

/** Every string in a tool's arguments, with its dotted path, through nested objects and arrays as `fillArgs` goes. */
function argStrings(value: unknown, path: string): [string, string][] {
  if (typeof value === 'string') return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((item, i) => argStrings(item, `${path}.${i}`));
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => argStrings(item, `${path}.${key}`));
  }
  return [];
}

const toolNodes: Rule = (g, tools) =>
  g.nodes.flatMap((n): Found[] => {
    if (n.type === 'agent') {
      return (n.data.tools ?? []).flatMap((name) => toolIssues(n, name, 'data.tools', tools));
    }
    if (n.type !== 'tool') return [];
    const issues: Found[] = [];
    const tool = n.data.tool?.trim();
    if (!tool) {
      issues.push({
        code: 'tool_missing',
        node_id: n.id,
        field: 'data.tool',
        message: `${named(n)} calls no tool: choose one.`,
      });
    } else {
      issues.push(...toolIssues(n, tool, 'data.tool', tools));
    }
    for (const [field, text] of argStrings(n.data.args ?? {}, 'data.args')) {
      const parsed = parseTemplate(text);
      if (!parsed.ok) {
        issues.push({
          code: 'invalid_template',
          node_id: n.id,
          field,
          message: `The argument '${field.slice('data.args.'.length)}' of ${nameOf(n)} is not a valid template: ${parsed.message} (at position ${parsed.position}).`,
        });
      }
    }
    return issues;
  });

const unusedNodes: Rule = (g) =>
  g.nodes
    .filter((n) => n.type !== 'start' && n.type !== 'end' && !g.touched.has(n.id))
    .map((n) => ({
      code: 'unused_node',
      node_id: n.id,
      message: `${named(n)} is not connected to anything: connect or remove it.`,
    }));

const isLiteralFalse = (e: Expr): boolean => e.kind === 'literal' && e.value === false;

const unreachableBranches: Rule = (g) =>
  g.nodes
    .filter((n) => n.type === 'router')
    .flatMap((n) => {
      const issues: Found[] = [];
      const earlier = new Set<string>();
      for (const e of outgoingOf(g, n.id)) {
        const condition = conditionOf(e);
        if (condition === undefined) continue;
        const parsed = parseExpression(condition);
        if (parsed.ok && isLiteralFalse(parsed.expr)) {
          issues.push({
            code: 'unreachable_branch',
            node_id: n.id,
            edge_id: e.id,
            field: 'data.condition',
            message: `The branch '${e.id}' of ${nameOf(n)} is never taken: its condition is false.`,
          });
        } else if (earlier.has(condition)) {
          issues.push({
            code: 'unreachable_branch',
            node_id: n.id,
            edge_id: e.id,
            field: 'data.condition',
            message: `The branch '${e.id}' of ${nameOf(n)} is never taken: an earlier branch has the same condition.`,
          });
        }
        earlier.add(condition);
      }
      return issues;
    });

const emptyPrompts: Rule = ({ nodes }) =>
  nodes
    .filter((n): n is AgentNode => n.type === 'agent' && systemPromptOf(n).trim() === '')
    .map((n) => ({
      code: 'empty_system_prompt',
      node_id: n.id,
      field: 'data.system_prompt',
      message: `${named(n)} has no system prompt: the model gets no instructions for this step.`,
    }));

const missingQuestions: Rule = ({ nodes }) =>
  nodes
    .filter((n): n is HumanNode => n.type === 'human' && !n.data.question?.trim())
    .map((n) => ({
      code: 'missing_question',
      node_id: n.id,
      field: 'data.question',
      message: `${named(n)} has no question: runs will ask the default one.`,
    }));

const RULES: Rule[] = [
  duplicateIds,
  reservedIds,
  startsAndEnds,
  edgeEnds,
  outgoingCounts,
  conditionsOutsideRouters,
  routers,
  reachability,
  cycles,
  toolNodes,
  unusedNodes,
  unreachableBranches,
  emptyPrompts,
  missingQuestions,
];

const rank = (code: IssueCode): number => ISSUE_CODES.indexOf(code);

/**
 * Checks a workflow and reports every problem at once, so a person can fix them in one go. Without `tools`, tool
 * names are not checked (the caller's catalog is not at hand). The order is stable: by code as `ISSUE_CODES` lists
 * them, then by the order of the nodes and edges in the workflow.
 */
export function validateWorkflow(workflow: Workflow, options: { tools?: ToolCatalog } = {}): ValidationReport {
  const g = graphOf(workflow);
  // Each rule finds its issues in node or edge order; a stable sort then groups them by code.
  const found = RULES.flatMap((rule) => rule(g, options.tools)).sort((a, b) => rank(a.code) - rank(b.code));
  const issues = found.map((issue): ValidationIssue => ({
    ...issue,
    severity: WARNINGS.has(issue.code) ? 'warning' : 'error',
  }));
  const errors = issues.filter((i) => i.severity === 'error');
  return { valid: errors.length === 0, errors, warnings: issues.filter((i) => i.severity === 'warning') };
}
