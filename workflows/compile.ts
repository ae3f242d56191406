import {
  Annotation,
  type BaseCheckpointSaver,
  END,
  type LangGraphRunnableConfig,
  START,
  StateGraph,
  interrupt,
} from '@langchain/langgraph';
import { type Expr, evaluate, fillArgs, parseExpression, scopeOf, toText, truthy } from './expression.js';
import type { HumanQuestion, HumanResume, WorkflowMessage, WorkflowRuntime } from './runtime.js';
import {
  type AgentNode,
  type HumanNode,
  type NodeType,
  RESERVED_IDS,
  type ToolNode,
  type Workflow,
  type WorkflowNode,
  conditionOf,
  questionOf,
  systemPromptOf,
} from './schema.js';

/**
 * Workflows as LangGraph graphs. The service runs what `compileWorkflow` builds, and the code generators emit the
 * same graph as source; both start from `planWorkflow`, so what a developer downloads takes the same steps as the
 * run they watched in the builder.
 */

/**
 * The run state. `messages` is the transcript every agent node answers; `vars` holds each agent, tool and human
 * node's result under the node's id (and the last agent or tool result as `output`), which is what router
 * conditions and tool argument templates read; `path` lists the nodes that ran, in order.
 */
export const WorkflowState = Annotation.Root({
  input: Annotation<string>(),
  messages: Annotation<WorkflowMessage[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  vars: Annotation<Record<string, unknown>>({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
  path: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export type WorkflowStateValues = typeof WorkflowState.State;
export type WorkflowStateUpdate = typeof WorkflowState.Update;

/**
 * Steps a run may take. Loops through routers are allowed, so a run that never reaches an end must still stop:
 * LangGraph then fails it with a `GraphRecursionError`. Compiled graphs carry it as their default.
 */
export const RECURSION_LIMIT = 100;

/** The state a run starts from: the input is also the transcript's first (user) message. */
export function initialState(input: string, vars: Record<string, unknown> = {}): WorkflowStateUpdate {
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

export interface CompileOptions {
  /** Needed for human nodes (a paused run is resumed from it) and to inspect a run with `getState`. */
  checkpointer?: BaseCheckpointSaver;
}

type NodeFunction = (state: WorkflowStateValues, config: LangGraphRunnableConfig) => Promise<WorkflowStateUpdate>;

/** What a node does, apart from the events every node writes around it. */
function nodeBody(n: WorkflowNode, runtime: WorkflowRuntime): NodeFunction {
  switch (n.type) {
    case 'agent':
      return agentBody(n, runtime);
    case 'tool':
      return toolBody(n, runtime);
    case 'human':
      return humanBody(n);
    default:
      return () => Promise.resolve({ path: [n.id] });
  }
}

function agentBody(n: AgentNode, runtime: WorkflowRuntime): NodeFunction {
  const { model, tools = [] } = n.data;
  const systemPrompt = systemPromptOf(n);
  return async (state, config) => {
    const text = await runtime.agent(
      { node: n.id, ...(model !== undefined && { model }), systemPrompt, tools, messages: state.messages },
      config,
    );
    return {
      messages: [{ role: 'assistant', content: text, node: n.id }],
      vars: { [n.id]: text, output: text },
      path: [n.id],
    };
  };
}

function toolBody(n: ToolNode, runtime: WorkflowRuntime): NodeFunction {
  const tool = n.data.tool ?? '';
  return async (state, config) => {
    const args = fillArgs(n.data.args ?? {}, scopeOf(state));
    const text = await runtime.callTool({ node: n.id, tool, args }, config);
    return {
      messages: [{ role: 'user', content: `Result of ${tool}: ${text}`, node: n.id }],
      vars: { [n.id]: text, output: text },
      path: [n.id],
    };
  };
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

function humanBody(n: HumanNode): NodeFunction {
  const question: HumanQuestion = { node: n.id, question: questionOf(n) };
  return () => {
    // On resume LangGraph runs the node again from the top, and `interrupt` then answers the resume value.
    const answer = answerOf(interrupt<HumanQuestion, unknown>(question));
    return Promise.resolve({
      messages: [{ role: 'user', content: answer, node: n.id }],
      vars: { [n.id]: answer },
      path: [n.id],
    });
  };
}

/** Wraps a node's body in its `node_started` and `node_finished` events (when the run streams custom events). */
function withEvents(n: WorkflowNode, body: NodeFunction): NodeFunction {
  const event = (type: NodeEvent['type']): NodeEvent => ({ type, node: n.id, node_type: n.type });
  return async (state, config) => {
    config.writer?.(event('node_started'));
    const update = await body(state, config);
    config.writer?.(event('node_finished'));
    return update;
  };
}

/**
 * Builds the LangGraph graph of a workflow: one node per workflow node, named by its id (start and end included,
 * so `path` shows them), edges as drawn, routers as conditional edges. The graph's default recursion limit is
 * `RECURSION_LIMIT`; a run's own `recursionLimit` overrides it. Throws `WorkflowCompileError` (see `planWorkflow`).
 */
export function compileWorkflow(workflow: Workflow, runtime: WorkflowRuntime, options: CompileOptions = {}) {
  const plan = planWorkflow(workflow);
  // Node names are only known at run time: widen them to string, or addEdge(START, id) does not type-check.
  const graph = new StateGraph(WorkflowState) as unknown as StateGraph<
    typeof WorkflowState.spec,
    WorkflowStateValues,
    WorkflowStateUpdate,
    string
  >;
  for (const n of plan.nodes) graph.addNode(n.id, withEvents(n, nodeBody(n, runtime)));
  graph.addEdge(START, plan.start);
  for (const [source, target] of plan.edges) graph.addEdge(source, target);
  for (const n of plan.nodes) if (n.type === 'end') graph.addEdge(n.id, END);
  for (const [id, router] of plan.routers) {
    const targets = [...new Set([...router.branches.map((b) => b.target), router.fallback])];
    graph.addConditionalEdges(id, (state: WorkflowStateValues) => routeFrom(router, state), targets);
  }
  return graph.compile({ checkpointer: options.checkpointer }).withConfig({ recursionLimit: RECURSION_LIMIT });
}

/** The graph `compileWorkflow` builds. */
export type CompiledWorkflow = ReturnType<typeof compileWorkflow>;
