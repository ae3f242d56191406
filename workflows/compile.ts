import {
  Annotation,
  type BaseCheckpointSaver,
  END,
  type LangGraphRunnableConfig,
  START,
  StateGraph,
  interrupt,
} from '@langchain/langgraph';
import { fillArgs, scopeOf } from './expression.js';
import {
  type NodeEvent,
  RECURSION_LIMIT,
  type WorkflowStateValues,
  answerOf,
  planWorkflow,
  routeFrom,
} from './plan.js';
import type { HumanQuestion, WorkflowMessage, WorkflowRuntime } from './runtime.js';
import {
  type AgentNode,
  type HumanNode,
  type ToolNode,
  type Workflow,
  type WorkflowNode,
  questionOf,
  systemPromptOf,
} from './schema.js';

/**
 * Workflows as LangGraph graphs. The service runs what `compileWorkflow` builds, and the code generators emit the
 * same graph as source; both start from `planWorkflow` (plan.ts), so what a developer downloads takes the same steps
 * as the run they watched in the builder.
 */

/** The run state (`WorkflowStateValues`) in LangGraph's channels. */
export const WorkflowState = Annotation.Root({
  input: Annotation<string>(),
  messages: Annotation<WorkflowMessage[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  vars: Annotation<Record<string, unknown>>({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
  path: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export type WorkflowStateUpdate = typeof WorkflowState.Update;

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
    typeof WorkflowState.State,
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
