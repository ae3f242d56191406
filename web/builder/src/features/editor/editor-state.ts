import type { Edge, Node, XYPosition } from '@xyflow/react';
import type { NodeData, NodeType, WorkflowDefinition, WorkflowEdge } from '../../api/builder-api';
import { kindOf } from './node-catalog';

export type FlowNode = Node<NodeData, NodeType>;
export interface EdgeData extends Record<string, unknown> {
  condition?: string;
}
export type FlowEdge = Edge<EdgeData, 'workflow'>;

/** Everything the editor saves: the workflow's fields and its graph in React Flow's shape. */
export interface Doc {
  name: string;
  description: string;
  tags: string[];
  nodes: FlowNode[];
  edges: FlowEdge[];
}

/**
 * The document with its undo and redo stacks. Every entry is a whole snapshot: the canvas state is small, and a
 * snapshot cannot get out of step with the state the way a list of inverse operations can.
 */
export interface EditorState {
  doc: Doc;
  past: Doc[];
  future: Doc[];
  /** The last edit that recorded history: typing into the same field soon after joins the same undo step. */
  lastEdit: { key: string; at: number } | null;
}

export type EditorAction =
  | { type: 'load'; doc: Doc }
  /** An edit the user can undo. Edits with the same `coalesce` key within a moment form one undo step. */
  | { type: 'edit'; update: (doc: Doc) => Doc; coalesce?: string; at: number }
  /** A change that is not an edit: selection, measured sizes, a drag in progress. */
  | { type: 'transient'; update: (doc: Doc) => Doc }
  /** Records the current document as an undo step before a gesture (a drag) changes it in many small steps. */
  | { type: 'checkpoint' }
  | { type: 'undo' }
  | { type: 'redo' };

/** How long a run of edits to one field counts as one undo step. */
export const COALESCE_MS = 1200;
const HISTORY_LIMIT = 200;

const pushed = (stack: Doc[], doc: Doc): Doc[] => [...stack.slice(-(HISTORY_LIMIT - 1)), doc];

/** Carries the current selection onto a document from the history, so undo does not jump the selection. */
function keepSelection(from: Doc, to: Doc): Doc {
  const nodes = new Set(from.nodes.filter((n) => n.selected).map((n) => n.id));
  const edges = new Set(from.edges.filter((e) => e.selected).map((e) => e.id));
  return {
    ...to,
    nodes: to.nodes.map((n) => (Boolean(n.selected) === nodes.has(n.id) ? n : { ...n, selected: nodes.has(n.id) })),
    edges: to.edges.map((e) => (Boolean(e.selected) === edges.has(e.id) ? e : { ...e, selected: edges.has(e.id) })),
  };
}

export function editorReducer(state: EditorState, action: EditorAction): EditorState {
  switch (action.type) {
    case 'load':
      return { doc: action.doc, past: [], future: [], lastEdit: null };
    case 'edit': {
      const doc = action.update(state.doc);
      if (doc === state.doc) return state;
      const joins =
        action.coalesce !== undefined &&
        state.lastEdit?.key === action.coalesce &&
        action.at - state.lastEdit.at < COALESCE_MS;
      return {
        doc,
        past: joins ? state.past : pushed(state.past, state.doc),
        future: [],
        lastEdit: action.coalesce === undefined ? null : { key: action.coalesce, at: action.at },
      };
    }
    case 'transient': {
      const doc = action.update(state.doc);
      return doc === state.doc ? state : { ...state, doc };
    }
    case 'checkpoint':
      return { ...state, past: pushed(state.past, state.doc), future: [], lastEdit: null };
    case 'undo': {
      const previous = state.past.at(-1);
      if (!previous) return state;
      return {
        doc: keepSelection(state.doc, previous),
        past: state.past.slice(0, -1),
        future: [...state.future, state.doc],
        lastEdit: null,
      };
    }
    case 'redo': {
      const next = state.future.at(-1);
      if (!next) return state;
      return {
        doc: keepSelection(state.doc, next),
        past: pushed(state.past, state.doc),
        future: state.future.slice(0, -1),
        lastEdit: null,
      };
    }
  }
}

/** An id of the form `agent_3` that no node or edge uses yet; `start` and `end` are used bare while free. */
export function nextId(prefix: string, taken: Iterable<string>, bare = false): string {
  const used = new Set(taken);
  if (bare && !used.has(prefix)) return prefix;
  const pattern = new RegExp(`^${prefix}_(\\d+)$`);
  let max = 0;
  for (const id of used) {
    const n = pattern.exec(id)?.[1];
    if (n !== undefined) max = Math.max(max, Number(n));
  }
  return `${prefix}_${max + 1}`;
}

const allIds = (doc: Pick<Doc, 'nodes' | 'edges'>) => [...doc.nodes.map((n) => n.id), ...doc.edges.map((e) => e.id)];

/** The id the next node of a type gets. */
export const newNodeId = (doc: Pick<Doc, 'nodes' | 'edges'>, type: NodeType) =>
  nextId(type, allIds(doc), type === 'start' || type === 'end');

/**
 * A new node of a type at a position, selected alone. `id` is the one the caller announced (from `newNodeId`);
 * should it have been taken meanwhile, the next free one is used.
 */
export function addNode(doc: Doc, type: NodeType, position: XYPosition, wanted?: string): { doc: Doc; id: string } {
  const id = wanted !== undefined && !allIds(doc).includes(wanted) ? wanted : newNodeId(doc, type);
  const node: FlowNode = { id, type, position, data: kindOf(type).initial(), selected: true };
  return {
    id,
    doc: {
      ...doc,
      nodes: [...doc.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node],
      edges: doc.edges.map((e) => (e.selected ? { ...e, selected: false } : e)),
    },
  };
}

/** Adds an edge unless the same connection exists already, or it would join a node to itself. */
export function connect(doc: Doc, source: string, target: string): { doc: Doc; id: string | null } {
  if (source === target || doc.edges.some((e) => e.source === source && e.target === target)) {
    return { doc, id: null };
  }
  const id = nextId('e', allIds(doc));
  return { doc: { ...doc, edges: [...doc.edges, { id, source, target, type: 'workflow' }] }, id };
}

/** Removes nodes and edges by id, and every edge that touched a removed node. */
export function removeElements(doc: Doc, ids: ReadonlySet<string>): Doc {
  const nodes = doc.nodes.filter((n) => !ids.has(n.id));
  if (nodes.length === doc.nodes.length && !doc.edges.some((e) => ids.has(e.id))) return doc;
  const kept = new Set(nodes.map((n) => n.id));
  return {
    ...doc,
    nodes,
    edges: doc.edges.filter((e) => !ids.has(e.id) && kept.has(e.source) && kept.has(e.target)),
  };
}

/** Selects exactly one node or edge (or nothing, with null). */
export function selectOnly(doc: Doc, id: string | null): Doc {
  return {
    ...doc,
    nodes: doc.nodes.map((n) => (Boolean(n.selected) === (n.id === id) ? n : { ...n, selected: n.id === id })),
    edges: doc.edges.map((e) => (Boolean(e.selected) === (e.id === id) ? e : { ...e, selected: e.id === id })),
  };
}

export function updateNodeData(doc: Doc, id: string, patch: Partial<NodeData>): Doc {
  return {
    ...doc,
    nodes: doc.nodes.map((n) => (n.id === id ? { ...n, data: dropUndefined({ ...n.data, ...patch }) } : n)),
  };
}

/** Sets an edge's label and condition; empty strings remove them (an edge without a condition is a default). */
export function updateEdge(doc: Doc, id: string, patch: { label?: string; condition?: string }): Doc {
  return {
    ...doc,
    edges: doc.edges.map((e) => {
      if (e.id !== id) return e;
      const next: FlowEdge = { ...e };
      if (patch.label !== undefined) next.label = patch.label || undefined;
      if (patch.condition !== undefined)
        next.data = dropUndefined({ ...e.data, condition: patch.condition || undefined });
      return next;
    }),
  };
}

function dropUndefined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

const round = (n: number) => Math.round(n * 10) / 10;

function toWorkflowEdge(e: FlowEdge): WorkflowEdge {
  const label = typeof e.label === 'string' && e.label.trim() ? e.label : undefined;
  const data = e.data && Object.keys(e.data).length > 0 ? { ...e.data } : undefined;
  return { id: e.id, source: e.source, target: e.target, ...(label && { label }), ...(data && { data }) };
}

/** The workflow in its interchange format, as saved, validated, generated and exported. */
export function toDefinition(doc: Doc): WorkflowDefinition {
  return {
    name: doc.name.trim(),
    description: doc.description,
    tags: doc.tags,
    schema_version: 1,
    nodes: doc.nodes.map((n) => ({
      id: n.id,
      type: n.type,
      position: { x: round(n.position.x), y: round(n.position.y) },
      data: n.data,
    })),
    edges: doc.edges.map(toWorkflowEdge),
  };
}

/** The parts of the definition whose meaning validation checks: positions and layout do not count. */
export function semanticKey(definition: WorkflowDefinition): string {
  return JSON.stringify({ ...definition, nodes: definition.nodes.map(({ position: _, ...rest }) => rest) });
}

const COLUMN = 280;
const ROW = 150;

/**
 * Positions for nodes that come without one (imports from other tools): columns by distance from the start
 * node, rows in order within a column. Nodes that have a position keep it.
 */
export function layout(definition: WorkflowDefinition): Map<string, XYPosition> {
  const depth = new Map<string, number>();
  const outgoing = new Map<string, string[]>();
  for (const e of definition.edges) outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e.target]);
  const queue = definition.nodes.filter((n) => n.type === 'start').map((n) => n.id);
  for (const id of queue) depth.set(id, 0);
  while (queue.length > 0) {
    const id = queue.shift()!;
    for (const next of outgoing.get(id) ?? []) {
      if (depth.has(next)) continue;
      depth.set(next, depth.get(id)! + 1);
      queue.push(next);
    }
  }
  const maxDepth = Math.max(0, ...depth.values());
  const rows = new Map<number, number>();
  const positions = new Map<string, XYPosition>();
  for (const n of definition.nodes) {
    if (n.position) {
      positions.set(n.id, n.position);
      continue;
    }
    const column = depth.get(n.id) ?? maxDepth + 1;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    positions.set(n.id, { x: column * COLUMN, y: row * ROW });
  }
  return positions;
}

/** The editor's document for a definition (loaded, imported or restored). */
export function fromDefinition(definition: WorkflowDefinition): Doc {
  const positions = layout(definition);
  return {
    name: definition.name,
    description: definition.description ?? '',
    tags: definition.tags ?? [],
    nodes: definition.nodes.map((n) => ({
      id: n.id,
      type: n.type,
      position: positions.get(n.id) ?? { x: 0, y: 0 },
      data:
        n.type === 'agent' && n.data.system_prompt === undefined && n.data.prompt !== undefined
          ? { ...n.data, system_prompt: n.data.prompt }
          : n.data,
    })),
    edges: definition.edges.map((e) => ({
      id: e.id,
      source: e.source,
      target: e.target,
      type: 'workflow',
      ...(e.label !== undefined && { label: e.label }),
      ...(e.data !== undefined && { data: e.data }),
    })),
  };
}

/** What a new workflow starts as: a start and an end, so there is something to connect. */
export function blankDoc(): Doc {
  return {
    name: 'Untitled workflow',
    description: '',
    tags: [],
    nodes: [
      { id: 'start', type: 'start', position: { x: 0, y: 80 }, data: { label: 'Start' } },
      { id: 'end', type: 'end', position: { x: 560, y: 80 }, data: { label: 'End' } },
    ],
    edges: [],
  };
}
