import { type Expr, evaluate, parseExpression, scopeOf, toText, truthy } from './expression.js';
import type { HumanResume, WorkflowMessage } from './runtime.js';
import { type NodeType, RESERVED_IDS, type Workflow, type WorkflowNode, conditionOf } from './schema.js';

/**
 * What a workflow runs as, before any graph exists: the checked and reduced plan that both the service's LangGraph
 * graph (`compileWorkflow` in compile.ts) and the code generators are built from, so what a developer downloads
 * takes the same steps as the run they watched in the builder. Nothing here needs LangGraph, which the service
 * loads only when a workflow runs.
 */

/**
 * The run state. `messages` is the transcript every agent node answers; `vars` holds each agent, tool and human
 * node's result under the node's id (and the last agent or tool result as `output`), which is what router
 * conditions and tool argument templates read; `path` lists the nodes that ran, in order.
 */
export interface WorkflowStateValues {
  input: string;
  messages: WorkflowMessage[];
  vars: Record<string, unknown>;
  path: string[];
}

/**
 * Steps a run may take. Loops through routers are allowed, so a run that never reaches an end must still stop:
 * LangGraph then fails it with a `GraphRecursionError`. Compiled graphs carry it as their default.
 */
export const RECURSION_LIMIT = 100;

/** The state a run starts from: the input is also the transcript's first (user) message. */
export function initialState(input: string, vars: Record<string, unknown> = {}): WorkflowStateValues {
  return { input, messages: [{ role: 'user', content: input }], vars, path: [] };
}

/** What each node writes to LangGraph's custom stream (`streamMode: 'custom'`), so a caller can show progress. */
export type NodeEvent = { type: 'node_started' | 'node_finished'; node: string; node_type: NodeType };

/** A workflow that cannot be built into a graph; validation reports the same problems before a run is tried. */
export class WorkflowCompileError extends Error {
  override readonly name = 'WorkflowCompileError';
}

/** A router's branch: taken when its condition holds and no earlier branch's did. */
export interface RouterBranch {
  target: string;
  /** The condition as written on the edge (trimmed). */
  condition: string;
  expr: Expr;
}

export interface RouterPlan {
  /** The conditioned branches, in edge order. */
  branches: RouterBranch[];
  /** Where the router goes when no condition holds: its edge without a condition. */
  fallback: string;
}

/**
 * The graph a workflow becomes, checked and reduced to what runs: the nodes reachable from the start (in the
 * workflow's order), plain edges as `[source, target]` pairs, and each router's branches. End nodes lead to
 * LangGraph's END; a node without outgoing edges ends the run there too.
 */
export interface WorkflowPlan {
  start: string;
  nodes: WorkflowNode[];
  edges: [source: string, target: string][];
  routers: Map<string, RouterPlan>;
}

const RESERVED: ReadonlySet<string> = new Set(RESERVED_IDS);

/**
 * Checks a workflow and reduces it to the graph that runs. Throws `WorkflowCompileError` for what no graph can
 * express: no or several start nodes, a duplicate or reserved id, an edge to or from a missing node, a tool node
 * without a tool, an end node or a non-router with more than one way on, a router without exactly one default
 * branch, a condition that does not parse. Nodes the start cannot reach (isolated ones among them) are left out.
 */
export function planWorkflow(workflow: Workflow): WorkflowPlan {
  const fail = (message: string): never => {
    throw new WorkflowCompileError(`Workflow "${workflow.name}": ${message}`);
  };
  const byId = new Map<string, WorkflowNode>();
  for (const n of workflow.nodes) {
    if (byId.has(n.id)) fail(`two nodes have the id "${n.id}"`);
    if (RESERVED.has(n.id)) fail(`the node id "${n.id}" is reserved for the run state; rename the node`);
    byId.set(n.id, n);
  }
  for (const e of workflow.edges) {
    for (const end of [e.source, e.target]) {
      if (!byId.has(end)) fail(`edge "${e.id}" connects "${e.source}" to "${e.target}", but there is no node "${end}"`);
    }
  }
  const starts = workflow.nodes.filter((n) => n.type === 'start');
  const [start] = starts;
  if (!start) return fail('it has no start node');
  if (starts.length > 1) fail(`it has ${starts.length} start nodes; a workflow has one`);

  const outgoing = (id: string) => workflow.edges.filter((e) => e.source === id);
  const reachable = new Set([start.id]);
  // A Set iterates over what is added while it iterates: a breadth-first walk.
  for (const id of reachable) for (const e of outgoing(id)) reachable.add(e.target);

  const nodes = workflow.nodes.filter((n) => reachable.has(n.id));
  const edges: [string, string][] = [];
  const routers = new Map<string, RouterPlan>();
  for (const n of nodes) {
    const out = outgoing(n.id);
    if (n.type === 'tool' && !n.data.tool?.trim()) fail(`tool node "${n.id}" names no tool`);
    if (n.type === 'router') {
      routers.set(n.id, planRouter(n.id, out, fail));
      continue;
    }
    const targets = [...new Set(out.map((e) => e.target))];
    if (n.type === 'end' && targets.length > 0) fail(`end node "${n.id}" has an outgoing edge; an end ends the run`);
    if (targets.length > 1) {
      fail(`${n.type} node "${n.id}" leads to ${targets.join(', ')}; only a router may choose between ways on`);
    }
    for (const target of targets) edges.push([n.id, target]);
  }
  return { start: start.id, nodes, edges, routers };
}

function planRouter(id: string, out: Workflow['edges'], fail: (message: string) => never): RouterPlan {
  const defaults = out.filter((e) => conditionOf(e) === undefined);
  const [fallback] = defaults;
  if (!fallback || defaults.length > 1) {
    fail(`router "${id}" has ${defaults.length} edges without a condition; it needs exactly one, its default branch`);
  }
  const branches = out.flatMap((e): RouterBranch[] => {
    const condition = conditionOf(e);
    if (condition === undefined) return [];
    const parsed = parseExpression(condition);
    if (!parsed.ok) {
      return fail(
        `the condition of edge "${e.id}" (${JSON.stringify(condition)}) does not parse: ${parsed.message} ` +
          `at position ${parsed.position}`,
      );
    }
    return [{ target: e.target, condition, expr: parsed.expr }];
  });
  return { branches, fallback: fallback.target };
}

/** Where a router goes in this state: the first branch whose condition holds, else its default. */
export function routeFrom(router: RouterPlan, state: WorkflowStateValues): string {
  const scope = scopeOf(state);
  return router.branches.find((b) => truthy(evaluate(b.expr, scope)))?.target ?? router.fallback;
}

/**
 * The answer a resume value carries: a wrapped answer (`humanResume`) or bare text as it is, anything else as text.
 * It never throws: LangGraph keeps a resume value that failed its node, so the run could never be answered again.
 */
export function answerOf(resume: unknown): string {
  if (typeof resume === 'object' && resume !== null && !Array.isArray(resume)) {
    const { answer } = resume as Partial<HumanResume>;
    if (typeof answer === 'string') return answer;
  }
  return toText(resume);
}
