import { BaseEdge, EdgeLabelRenderer, getBezierPath, useStore, type EdgeProps } from '@xyflow/react';
import { memo } from 'react';
import { severityOf, useDecorations } from './decorations';
import type { FlowEdge } from './editor-state';

/**
 * Below this zoom a label keeps the size it has at this zoom, so that a branch's name stays readable (its 12px text
 * never shows smaller than about 9.6px) when the canvas is zoomed out to fit a large workflow; up to a point, past
 * which it would hide what it labels.
 */
const LABEL_MIN_ZOOM = 0.8;
const LABEL_MAX_SCALE = 2.4;

/**
 * An edge with its label: a router's branch shows its condition (or "default"), and an edge with issues is drawn
 * red (errors) or amber (warnings) with the message in its label.
 */
function WorkflowEdgeViewBase({
  id,
  source,
  target,
  sourceX,
  sourceY,
  targetX,
  targetY,
  sourcePosition,
  targetPosition,
  label,
  data,
  selected,
  markerEnd,
}: EdgeProps<FlowEdge>) {
  const { edgeIssues, routers, travelled: steps, select } = useDecorations();
  const zoom = useStore((state) => state.transform[2]);
  const scale = zoom > 0 && zoom < LABEL_MIN_ZOOM ? Math.min(LABEL_MIN_ZOOM / zoom, LABEL_MAX_SCALE) : 1;
  const [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, sourcePosition, targetX, targetY, targetPosition });
  const issues = edgeIssues.get(id) ?? [];
  const severity = severityOf(issues);
  const fromRouter = routers.has(source);
  const condition = typeof data?.condition === 'string' && data.condition.trim() ? data.condition : undefined;
  const text = typeof label === 'string' && label.trim() ? label : undefined;
  const travelled = steps.has(`${source}>${target}`);
  const showLabel = text !== undefined || fromRouter || severity !== null;

  return (
    <>
      <BaseEdge
        id={id}
        path={path}
        markerEnd={markerEnd}
        className="wf-edge"
        data-severity={severity ?? undefined}
        data-travelled={travelled ? 'true' : undefined}
        data-selected={selected ? 'true' : undefined}
        interactionWidth={24}
      />
      {showLabel ? (
        <EdgeLabelRenderer>
          <div
            className="wf-edge-label nodrag nopan"
            data-severity={severity ?? undefined}
            data-selected={selected ? 'true' : undefined}
            // React sets styles through the CSSOM, which the Content Security Policy allows.
            style={{ transform: `translate(${labelX}px, ${labelY}px) translate(-50%, -50%) scale(${scale})` }}
            onClick={() => select(id)}
          >
            {text && text !== condition ? <span className="wf-edge-label__text">{text}</span> : null}
            {fromRouter ? (
              condition ? (
                <code className="wf-edge-label__condition">{condition}</code>
              ) : (
                <span className="wf-edge-label__default">default</span>
              )
            ) : null}
            {severity ? (
              <span className="wf-edge-label__issue" role="note">
                {issues.map((issue) => issue.message).join(' ')}
              </span>
            ) : null}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

export const WorkflowEdgeView = memo(WorkflowEdgeViewBase);
