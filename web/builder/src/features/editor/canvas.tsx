import {
  Background,
  BackgroundVariant,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  useReactFlow,
  type Connection,
  type EdgeChange,
  type NodeChange,
  applyEdgeChanges,
  applyNodeChanges,
} from '@xyflow/react';
import { useCallback, useMemo, useRef, type Dispatch, type DragEvent, type RefObject } from 'react';
import type { NodeType } from '../../api/builder-api';
import { DecorationsContext, type Decorations } from './decorations';
import { addNode, connect, newNodeId, type Doc, type EditorAction, type FlowEdge, type FlowNode } from './editor-state';
import { DRAG_MIME, isNodeType, kindOf } from './node-catalog';
import { WorkflowEdgeView } from './workflow-edge';
import { issueTipId, nodeSummary, WorkflowNodeView } from './workflow-node';

/** The canvas id, which React Flow also puts into the ids of its own descriptions. */
export const CANVAS_ID = 'workflow-canvas';
const NODE_DESCRIPTION = `react-flow__node-desc-${CANVAS_ID}`;

// Registered once, outside render, as React Flow asks: a new object each render remounts every node.
export const NODE_TYPES = Object.fromEntries(
  (['start', 'agent', 'router', 'tool', 'human', 'end'] as const).map((t) => [t, WorkflowNodeView]),
);
export const EDGE_TYPES = { workflow: WorkflowEdgeView };
export const DEFAULT_EDGE = {
  type: 'workflow',
  markerEnd: { type: MarkerType.ArrowClosed, width: 18, height: 18 },
} as const;
const DELETE_KEYS = ['Delete', 'Backspace'];
const MINIMAP_SIZE = { width: 168, height: 112 } as const;
/** React Flow's margin around its panels (the minimap, the zoom controls). */
const PANEL_MARGIN_PX = 15;
/**
 * Fitting the view leaves the band along the bottom that the minimap and the zoom controls sit in, so that no node
 * is fitted under them.
 */
const FIT_VIEW = {
  padding: { top: '32px', left: '40px', right: '40px', bottom: `${MINIMAP_SIZE.height + 2 * PANEL_MARGIN_PX}px` },
  maxZoom: 1.1,
} as const;

/** Roughly half a node, so a node dropped or added lands centred where it was meant to. */
const HALF_NODE = { x: 100, y: 40 };

export interface CanvasProps {
  nodes: FlowNode[];
  edges: FlowEdge[];
  dispatch: Dispatch<EditorAction>;
  decorations: Decorations;
  /** Called after a node was dropped from the palette, to announce it. */
  onAdded: (id: string, type: NodeType) => void;
  wrapperRef: RefObject<HTMLDivElement | null>;
}

/** A label screen readers read for a node: its type, its label, and how many issues it has. */
function nodeAriaLabel(node: FlowNode, decorations: Decorations): string {
  const kind = kindOf(node.type);
  const issues = decorations.nodeIssues.get(node.id) ?? [];
  const label = node.data.label?.trim() || kind.title;
  const summary = nodeSummary(node.type, node.data);
  const problems = issues.length ? `, ${issues.length} ${issues.length === 1 ? 'problem' : 'problems'}` : '';
  return `${kind.title} node ${label}${summary ? ` (${summary})` : ''}${problems}`;
}

function edgeAriaLabel(edge: FlowEdge, nodes: Map<string, FlowNode>, decorations: Decorations): string {
  const name = (id: string) => {
    const n = nodes.get(id);
    return n ? n.data.label?.trim() || kindOf(n.type).title : id;
  };
  const parts = [`Edge from ${name(edge.source)} to ${name(edge.target)}`];
  if (typeof edge.label === 'string' && edge.label) parts.push(`labelled ${edge.label}`);
  if (decorations.routers.has(edge.source)) {
    parts.push(edge.data?.condition ? `when ${edge.data.condition}` : 'default branch');
  }
  const issues = decorations.edgeIssues.get(edge.id) ?? [];
  for (const issue of issues) parts.push(`${issue.severity}: ${issue.message}`);
  return parts.join(', ');
}

/**
 * The workflow canvas. The flow is controlled: every change React Flow reports goes through the editor's reducer,
 * where removals and connections become undo steps, a drag is one step (recorded when it starts), and selection and
 * measuring are not steps at all.
 */
export function Canvas({ nodes, edges, dispatch, decorations, onAdded, wrapperRef }: CanvasProps) {
  const flow = useReactFlow<FlowNode, FlowEdge>();
  const dragging = useRef(false);
  /** One key per turn of the event loop, so a deletion's node and edge changes (two callbacks) are one undo step. */
  const tickKey = useRef<string | null>(null);
  const ticks = useRef(0);

  const gestureKey = useCallback(() => {
    if (tickKey.current === null) {
      tickKey.current = `gesture-${++ticks.current}`;
      queueMicrotask(() => {
        tickKey.current = null;
      });
    }
    return tickKey.current;
  }, []);

  const onNodesChange = useCallback(
    (changes: NodeChange<FlowNode>[]) => {
      const update = (doc: Doc): Doc => ({ ...doc, nodes: applyNodeChanges(changes, doc.nodes) });
      const at = Date.now();
      if (changes.some((c) => c.type === 'remove' || c.type === 'add' || c.type === 'replace')) {
        dispatch({ type: 'edit', update, coalesce: gestureKey(), at });
      } else if (!dragging.current && changes.some((c) => c.type === 'position' && !c.dragging)) {
        // Arrow keys move a selected node a step at a time: a run of steps is one undo step.
        const ids = changes.map((c) => ('id' in c ? c.id : '')).join(',');
        dispatch({ type: 'edit', update, coalesce: `move:${ids}`, at });
      } else {
        dispatch({ type: 'transient', update });
      }
    },
    [dispatch, gestureKey],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange<FlowEdge>[]) => {
      const update = (doc: Doc): Doc => ({ ...doc, edges: applyEdgeChanges(changes, doc.edges) });
      if (changes.some((c) => c.type === 'remove' || c.type === 'add' || c.type === 'replace')) {
        dispatch({ type: 'edit', update, coalesce: gestureKey(), at: Date.now() });
      } else {
        dispatch({ type: 'transient', update });
      }
    },
    [dispatch, gestureKey],
  );

  const onConnect = useCallback(
    (connection: Connection) => {
      dispatch({
        type: 'edit',
        update: (doc) => connect(doc, connection.source, connection.target).doc,
        at: Date.now(),
      });
    },
    [dispatch],
  );

  const onDragOver = useCallback((event: DragEvent) => {
    if (!event.dataTransfer.types.includes(DRAG_MIME)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
  }, []);

  const onDrop = useCallback(
    (event: DragEvent) => {
      const type = event.dataTransfer.getData(DRAG_MIME);
      if (!isNodeType(type)) return;
      event.preventDefault();
      const at = flow.screenToFlowPosition({ x: event.clientX, y: event.clientY });
      const position = { x: Math.round(at.x - HALF_NODE.x), y: Math.round(at.y - HALF_NODE.y) };
      const id = newNodeId({ nodes, edges }, type);
      dispatch({ type: 'edit', update: (doc) => addNode(doc, type, position, id).doc, at: Date.now() });
      onAdded(id, type);
    },
    [dispatch, flow, onAdded, nodes, edges],
  );

  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  const shownNodes = useMemo(
    () =>
      nodes.map((n) => ({
        ...n,
        ariaLabel: nodeAriaLabel(n, decorations),
        domAttributes: decorations.nodeIssues.has(n.id)
          ? { 'aria-describedby': `${issueTipId(n.id)} ${NODE_DESCRIPTION}` }
          : undefined,
      })),
    [nodes, decorations],
  );
  const shownEdges = useMemo(
    () =>
      edges.map((e) => ({
        ...e,
        type: 'workflow' as const,
        markerEnd: DEFAULT_EDGE.markerEnd,
        ariaLabel: edgeAriaLabel(e, byId, decorations),
      })),
    [edges, byId, decorations],
  );

  return (
    <DecorationsContext.Provider value={decorations}>
      <div ref={wrapperRef} className="canvas">
        <ReactFlow<FlowNode, FlowEdge>
          id={CANVAS_ID}
          nodes={shownNodes}
          edges={shownEdges}
          nodeTypes={NODE_TYPES}
          edgeTypes={EDGE_TYPES}
          defaultEdgeOptions={DEFAULT_EDGE}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onConnect={onConnect}
          isValidConnection={(c) => c.source !== c.target}
          onNodeDragStart={() => {
            dragging.current = true;
            dispatch({ type: 'checkpoint' });
          }}
          onNodeDragStop={() => {
            dragging.current = false;
          }}
          onDragOver={onDragOver}
          onDrop={onDrop}
          deleteKeyCode={DELETE_KEYS}
          fitView
          fitViewOptions={FIT_VIEW}
          minZoom={0.2}
          maxZoom={2}
          snapToGrid
          snapGrid={[10, 10]}
        >
          <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} className="canvas__background" />
          <Controls aria-label="Zoom and view controls" showInteractive={false} fitViewOptions={FIT_VIEW} />
          <MiniMap
            style={MINIMAP_SIZE}
            ariaLabel="Overview of the whole workflow"
            pannable
            zoomable
            nodeBorderRadius={6}
            nodeClassName={(n) => `minimap-node minimap-node--${n.type ?? 'agent'}`}
          />
        </ReactFlow>
      </div>
    </DecorationsContext.Provider>
  );
}
