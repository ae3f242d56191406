import { Background, BackgroundVariant, Controls, ReactFlow, ReactFlowProvider } from '@xyflow/react';
import { useMemo } from 'react';
import type { WorkflowDefinition } from '../../api/builder-api';
import { DEFAULT_EDGE, EDGE_TYPES, NODE_TYPES } from './canvas';
import { type Decorations, DecorationsContext, EMPTY_DECORATIONS } from './decorations';
import { fromDefinition, type FlowEdge, type FlowNode } from './editor-state';

/**
 * A read-only canvas of a workflow (an older version, or a run's), with pan and zoom but no editing; `progress`
 * shows where a run is and has been.
 */
export function PreviewCanvas({
  definition,
  label,
  progress,
}: {
  definition: WorkflowDefinition;
  label: string;
  progress?: Pick<Decorations, 'running' | 'visited' | 'travelled'>;
}) {
  const doc = useMemo(() => fromDefinition(definition), [definition]);
  const decorations = useMemo(
    () => ({
      ...EMPTY_DECORATIONS,
      ...progress,
      routers: new Set(doc.nodes.filter((n) => n.type === 'router').map((n) => n.id)),
    }),
    [doc, progress],
  );
  const edges = useMemo(() => doc.edges.map((e) => ({ ...e, markerEnd: DEFAULT_EDGE.markerEnd })), [doc]);
  return (
    <ReactFlowProvider>
      <DecorationsContext.Provider value={decorations}>
        <figure className="preview-canvas" aria-label={label}>
          <ReactFlow<FlowNode, FlowEdge>
            id="version-preview"
            nodes={doc.nodes}
            edges={edges}
            nodeTypes={NODE_TYPES}
            edgeTypes={EDGE_TYPES}
            nodesDraggable={false}
            nodesConnectable={false}
            nodesFocusable={false}
            edgesFocusable={false}
            elementsSelectable={false}
            fitView
            fitViewOptions={{ padding: 0.15, maxZoom: 1 }}
            minZoom={0.1}
          >
            <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} />
            <Controls showInteractive={false} aria-label="Zoom controls of the preview" />
          </ReactFlow>
        </figure>
      </DecorationsContext.Provider>
    </ReactFlowProvider>
  );
}
