import type { Run, RunStatus } from '../../api/builder-api';
import type { RunEvent } from '../../api/run-stream';

export interface ToolStep {
  name: string;
  args: unknown;
  result?: unknown;
  isError?: boolean;
}

/** One entry of a run's timeline: a node at work, with what it said, the tools it called, the answer it got. */
export type TimelineItem = {
  key: string;
  nodeId: string;
  nodeType: string;
  status: 'running' | 'done' | 'waiting';
  text: string;
  tools: ToolStep[];
  /** At a human node: the answer given to its question. */
  answer?: string;
};

export interface RunView {
  runId: string | null;
  version: number | null;
  /** `idle` before anything ran; `starting` until the service confirms the run. */
  status: 'idle' | 'starting' | RunStatus;
  input: string;
  items: TimelineItem[];
  output: string | null;
  question: string | null;
  waitingNode: string | null;
  error: string | null;
  path: string[];
}

export const IDLE_RUN: RunView = {
  runId: null,
  version: null,
  status: 'idle',
  input: '',
  items: [],
  output: null,
  question: null,
  waitingNode: null,
  error: null,
  path: [],
};

let keys = 0;
const key = () => `t${++keys}`;

/** The node entry still open for a node (running or waiting), the newest first. */
function openIndex(items: TimelineItem[], nodeId: string): number {
  return items.findLastIndex((i) => i.nodeId === nodeId && i.status !== 'done');
}

function updateNode(
  items: TimelineItem[],
  nodeId: string,
  update: (item: TimelineItem) => TimelineItem,
): TimelineItem[] {
  const index = openIndex(items, nodeId);
  const found = items[index];
  if (index < 0 || !found) {
    // An event for a node whose start was not seen (a resumed run): open an entry for it.
    const fresh = { key: key(), nodeId, nodeType: '', status: 'running', text: '', tools: [] } as const;
    return [...items, update({ ...fresh, tools: [] })];
  }
  return items.map((item, i) => (i === index ? update(found) : item));
}

/** The run's view after one streamed event. */
export function applyRunEvent(view: RunView, event: RunEvent): RunView {
  switch (event.type) {
    case 'run_started':
      return { ...view, runId: event.run_id, version: event.version, status: 'running', error: null };
    case 'node_started': {
      // A resumed human node starts again: it is the entry that already holds its answer.
      const last = view.items.at(-1);
      if (last?.nodeId === event.node_id && last.status === 'running') return { ...view, status: 'running' };
      return {
        ...view,
        status: 'running',
        items: [
          ...view.items,
          {
            key: key(),
            nodeId: event.node_id,
            nodeType: event.node_type,
            status: 'running',
            text: '',
            tools: [],
          },
        ],
      };
    }
    case 'token':
      return { ...view, items: updateNode(view.items, event.node_id, (n) => ({ ...n, text: n.text + event.text })) };
    case 'tool_call':
      return {
        ...view,
        items: updateNode(view.items, event.node_id, (n) => ({
          ...n,
          tools: [...n.tools, { name: event.name, args: event.args }],
        })),
      };
    case 'tool_result':
      return {
        ...view,
        items: updateNode(view.items, event.node_id, (n) => {
          const index = n.tools.findLastIndex((t) => t.name === event.name && t.result === undefined);
          const tools =
            index < 0
              ? [...n.tools, { name: event.name, args: undefined, result: event.content, isError: event.is_error }]
              : n.tools.map((t, i) => (i === index ? { ...t, result: event.content, isError: event.is_error } : t));
          return { ...n, tools };
        }),
      };
    case 'node_finished':
      return { ...view, items: updateNode(view.items, event.node_id, (n) => ({ ...n, status: 'done' })) };
    case 'interrupt':
      return {
        ...view,
        runId: event.run_id || view.runId,
        status: 'waiting',
        question: event.question,
        waitingNode: event.node_id,
        items: updateNode(view.items, event.node_id, (n) => ({
          ...n,
          nodeType: n.nodeType || 'human',
          status: 'waiting',
        })),
      };
    case 'end':
      // A run that paused at a human node ends its stream as `waiting`: the question stays open.
      if (event.status === 'waiting') {
        return { ...view, runId: event.run_id || view.runId, status: 'waiting', path: event.path };
      }
      return {
        ...view,
        runId: event.run_id || view.runId,
        status: event.status,
        output: event.output,
        path: event.path,
        question: null,
        waitingNode: null,
        items: view.items.map((i) => (i.status !== 'done' ? { ...i, status: 'done' } : i)),
      };
    case 'error':
      return {
        ...view,
        status: 'failed',
        error: event.message,
        items: view.items.map((i) => (i.status === 'running' ? { ...i, status: 'done' } : i)),
      };
  }
}

/** The view of a run from the list of past runs: its path, its output, and the question it waits on. */
export function viewOfRun(run: Run): RunView {
  return {
    runId: run.run_id,
    version: run.version,
    status: run.status,
    input: run.input,
    items: run.path.map((nodeId) => ({
      key: key(),
      nodeId,
      nodeType: '',
      status: run.status === 'waiting' && nodeId === run.waiting_node ? 'waiting' : 'done',
      text: '',
      tools: [],
    })),
    output: run.output,
    question: run.question,
    waitingNode: run.waiting_node,
    error: run.error,
    path: run.path,
  };
}

/** The view as a resumption starts: the waiting node holds the answer and runs on. */
export function withAnswer(view: RunView, answer: string): RunView {
  return {
    ...view,
    status: 'running',
    question: null,
    waitingNode: null,
    error: null,
    items: view.items.map((i) => (i.status === 'waiting' ? { ...i, status: 'running', answer } : i)),
  };
}

/** The node a run is in now, for the canvas to highlight. */
export function currentNode(view: RunView): string | null {
  if (view.status === 'waiting') return view.waitingNode;
  if (view.status !== 'running') return null;
  return view.items.findLast((i) => i.status === 'running')?.nodeId ?? null;
}

/**
 * The steps the run took from one node to the next, as `source>target`: from the path the service reported, or
 * while it runs, from the order the nodes started in.
 */
export function travelledSteps(view: RunView): Set<string> {
  const order = view.path.length > 0 ? view.path : view.items.map((i) => i.nodeId);
  const steps = new Set<string>();
  for (let i = 1; i < order.length; i++) steps.add(`${order[i - 1]}>${order[i]}`);
  return steps;
}

/** Every node the run has been through. */
export function visitedNodes(view: RunView): Set<string> {
  const ids = new Set(view.path);
  for (const item of view.items) ids.add(item.nodeId);
  return ids;
}
