import type { Run, RunStatus } from '../../api/builder-api';
import type { RunEvent } from '../../api/run-stream';

// Moments are milliseconds since the epoch: an event's `at` when it has one, else when it arrived. They are null
// where no event said (a past run shown from its summary alone).

export interface ToolStep {
  name: string;
  args: unknown;
  result?: unknown;
  isError?: boolean;
  /** When the call was made, and when its result came. */
  startedAt: number | null;
  endedAt: number | null;
}

/** One entry of a run's timeline: a node at work, with what it said, the tools it called, the answer it got. */
export type TimelineItem = {
  key: string;
  nodeId: string;
  nodeType: string;
  status: 'running' | 'done' | 'waiting';
  /** The node's streamed tokens, joined. */
  text: string;
  tools: ToolStep[];
  /** At a human node: the answer given to its question. */
  answer?: string;
  startedAt: number | null;
  endedAt: number | null;
  /** When the node's first token came. */
  firstTokenAt: number | null;
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
  /** When the run started, and when it ended (null while it runs or waits). */
  startedAt: number | null;
  endedAt: number | null;
  /** The last event's moment: how far a node still at work has got. */
  lastAt: number | null;
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
  startedAt: null,
  endedAt: null,
  lastAt: null,
};

let keys = 0;
const key = () => `t${++keys}`;

/** The node entry still open for a node (running or waiting), the newest first. */
function openIndex(items: TimelineItem[], nodeId: string): number {
  return items.findLastIndex((i) => i.nodeId === nodeId && i.status !== 'done');
}

function entry(nodeId: string, nodeType: string, status: TimelineItem['status'], at: number | null): TimelineItem {
  return {
    key: key(),
    nodeId,
    nodeType,
    status,
    text: '',
    tools: [],
    startedAt: at,
    endedAt: null,
    firstTokenAt: null,
  };
}

function updateNode(
  items: TimelineItem[],
  nodeId: string,
  at: number,
  update: (item: TimelineItem) => TimelineItem,
): TimelineItem[] {
  const index = openIndex(items, nodeId);
  const found = items[index];
  // An event for a node whose start was not seen (a resumed run): open an entry for it.
  if (index < 0 || !found) return [...items, update(entry(nodeId, '', 'running', at))];
  return items.map((item, i) => (i === index ? update(found) : item));
}

/** Closes the entries still open at a moment, as the run ends or fails. */
function closeOpen(items: TimelineItem[], at: number, which: (item: TimelineItem) => boolean): TimelineItem[] {
  return items.map((i) => (i.status !== 'done' && which(i) ? { ...i, status: 'done', endedAt: i.endedAt ?? at } : i));
}

/** When an event happened: its `at`, or `now` (when it arrived) for a live event without one. */
function momentOf(event: RunEvent, now: number): number {
  const at = event.at === undefined ? Number.NaN : Date.parse(event.at);
  return Number.isNaN(at) ? now : at;
}

/** The run's view after one event, streamed (`now` is when it arrived) or recorded (it says when in `at`). */
export function applyRunEvent(previous: RunView, event: RunEvent, now = Date.now()): RunView {
  const at = momentOf(event, now);
  const view: RunView = { ...previous, lastAt: Math.max(previous.lastAt ?? at, at) };
  switch (event.type) {
    case 'run_started':
      // A resumption starts a stream of its own: the run's start stays the first one.
      return {
        ...view,
        runId: event.run_id,
        version: event.version,
        status: 'running',
        error: null,
        startedAt: view.startedAt ?? at,
        endedAt: null,
      };
    case 'node_started': {
      // A resumed human node starts again: it is the entry that already holds its answer (or, replayed from the
      // record, the one still waiting).
      const last = view.items.at(-1);
      if (last?.nodeId === event.node_id && (last.status === 'running' || last.status === 'waiting')) {
        return { ...view, status: 'running', items: [...view.items.slice(0, -1), { ...last, status: 'running' }] };
      }
      return {
        ...view,
        status: 'running',
        items: [...view.items, entry(event.node_id, event.node_type, 'running', at)],
      };
    }
    case 'token':
      return {
        ...view,
        items: updateNode(view.items, event.node_id, at, (n) => ({
          ...n,
          text: n.text + event.text,
          firstTokenAt: n.firstTokenAt ?? at,
        })),
      };
    case 'tool_call':
      return {
        ...view,
        items: updateNode(view.items, event.node_id, at, (n) => ({
          ...n,
          tools: [...n.tools, { name: event.name, args: event.args, startedAt: at, endedAt: null }],
        })),
      };
    case 'tool_result':
      return {
        ...view,
        items: updateNode(view.items, event.node_id, at, (n) => {
          const index = n.tools.findLastIndex((t) => t.name === event.name && t.result === undefined);
          const result = { result: event.content, isError: event.is_error, endedAt: at };
          const tools =
            index < 0
              ? [...n.tools, { name: event.name, args: undefined, startedAt: null, ...result }]
              : n.tools.map((t, i) => (i === index ? { ...t, ...result } : t));
          return { ...n, tools };
        }),
      };
    case 'node_finished':
      return {
        ...view,
        items: updateNode(view.items, event.node_id, at, (n) => ({ ...n, status: 'done', endedAt: at })),
      };
    case 'interrupt':
      return {
        ...view,
        runId: event.run_id || view.runId,
        status: 'waiting',
        question: event.question,
        waitingNode: event.node_id,
        items: updateNode(view.items, event.node_id, at, (n) => ({
          ...n,
          nodeType: n.nodeType || 'human',
          status: 'waiting',
        })),
      };
    case 'answer':
      // The answer a resumption goes on with: the waiting node holds it and runs on.
      return {
        ...view,
        status: 'running',
        question: null,
        waitingNode: null,
        items: updateNode(view.items, event.node_id, at, (n) => ({ ...n, answer: event.answer, status: 'running' })),
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
        endedAt: at,
        items: closeOpen(view.items, at, () => true),
      };
    case 'error':
      return {
        ...view,
        status: 'failed',
        error: event.message,
        items: closeOpen(view.items, at, (i) => i.status === 'running'),
      };
  }
}

/** The view of a run from the list of past runs: its path, its output, and the question it waits on. */
export function viewOfRun(run: Run): RunView {
  return {
    ...IDLE_RUN,
    runId: run.run_id,
    version: run.version,
    status: run.status,
    input: run.input,
    items: run.path.map((nodeId) =>
      entry(nodeId, '', run.status === 'waiting' && nodeId === run.waiting_node ? 'waiting' : 'done', null),
    ),
    output: run.output,
    question: run.question,
    waitingNode: run.waiting_node,
    error: run.error,
    path: run.path,
  };
}

/**
 * A past run as it showed live, replayed from its recorded events. Where the run stands now (its status, output,
 * question and path) is the run's own record: the events may stop short of it.
 */
export function replayRun(run: Run, events: readonly RunEvent[]): RunView {
  let view: RunView = { ...IDLE_RUN, runId: run.run_id, version: run.version, status: 'running', input: run.input };
  for (const event of events) view = applyRunEvent(view, event, view.lastAt ?? 0);
  const waiting = run.status === 'waiting';
  const settled = !waiting && run.status !== 'running';
  const end = view.endedAt ?? view.lastAt ?? 0;
  return {
    ...view,
    status: run.status,
    output: run.output,
    question: run.question,
    waitingNode: run.waiting_node,
    error: run.error ?? view.error,
    path: run.path.length > 0 ? run.path : view.path,
    endedAt: settled ? end : null,
    items: settled ? closeOpen(view.items, end, () => true) : view.items,
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

/** The stretch of time a run's trace covers: from its start to its end, or to its last event while it goes on. */
export interface TraceWindow {
  from: number;
  durationMs: number;
}

export function traceWindow(view: RunView): TraceWindow | null {
  const from = view.startedAt ?? view.items.find((i) => i.startedAt !== null)?.startedAt ?? null;
  const to = view.endedAt ?? view.lastAt;
  if (from === null || to === null) return null;
  return { from, durationMs: Math.max(to - from, 0) };
}

/** A stretch within the trace: where it starts and how long it lasts, in milliseconds and as fractions of it. */
export interface TraceSlice {
  offsetMs: number;
  durationMs: number;
  start: number;
  length: number;
  /** It has not ended yet: it reaches as far as the run has got. */
  open: boolean;
}

export function sliceOf(
  window: TraceWindow | null,
  startedAt: number | null,
  endedAt: number | null,
  lastAt: number | null,
): TraceSlice | null {
  if (window === null || startedAt === null) return null;
  const end = endedAt ?? lastAt ?? startedAt;
  const total = Math.max(window.durationMs, 1);
  const offsetMs = Math.max(startedAt - window.from, 0);
  const durationMs = Math.max(end - startedAt, 0);
  return { offsetMs, durationMs, start: offsetMs / total, length: durationMs / total, open: endedAt === null };
}
