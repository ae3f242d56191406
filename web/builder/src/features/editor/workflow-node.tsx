import { Handle, Position, type NodeProps } from '@xyflow/react';
import { memo } from 'react';
import type { NodeData } from '../../api/builder-api';
import { NodeTypeIcon } from '../../ui/icons';
import { severityOf, useDecorations } from './decorations';
import type { FlowNode } from './editor-state';
import { kindOf } from './node-catalog';

/** The id of the element that describes a node's issues (the node's wrapper points at it). */
export const issueTipId = (nodeId: string) => `wf-issues-${nodeId}`;

function firstLine(text: string | undefined, max = 60): string | undefined {
  const line = text?.trim().split('\n')[0]?.trim();
  if (!line) return undefined;
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
}

/** One line under the label that says what this node will do. */
export function nodeSummary(type: string, data: NodeData): string | undefined {
  switch (type) {
    case 'agent': {
      const tools = data.tools?.length ?? 0;
      const parts = [data.model?.trim() || 'default model', tools ? `${tools} ${tools === 1 ? 'tool' : 'tools'}` : ''];
      return parts.filter(Boolean).join(' · ');
    }
    case 'tool':
      return data.tool ? data.tool : 'No tool chosen';
    case 'human':
      return firstLine(data.question) ?? 'Asks for an answer';
    case 'router':
      return 'Branches on conditions';
    case 'start':
      return 'Receives the input';
    case 'end':
      return 'Returns the output';
    default:
      return undefined;
  }
}

/** A node on the canvas: its type, label and summary, its handles, and the issues validation found in it. */
function WorkflowNodeViewBase({ id, type, data, selected }: NodeProps<FlowNode>) {
  const { nodeIssues, running, visited } = useDecorations();
  const kind = kindOf(type);
  const issues = nodeIssues.get(id) ?? [];
  const severity = severityOf(issues);
  const state = running === id ? 'running' : visited.has(id) ? 'visited' : undefined;
  return (
    <div
      className="wf-node"
      data-type={type}
      data-severity={severity ?? undefined}
      data-run={state}
      data-selected={selected ? 'true' : undefined}
    >
      {kind.inputs ? <Handle type="target" position={Position.Left} className="wf-handle" /> : null}
      <div className="wf-node__head">
        <span className="wf-node__icon">
          <NodeTypeIcon type={type} />
        </span>
        <span className="wf-node__type">{kind.title}</span>
        {state === 'running' ? <span className="wf-node__pulse" aria-hidden="true" /> : null}
        {severity ? (
          <span className="wf-node__flag" aria-hidden="true">
            {issues.length}
          </span>
        ) : null}
      </div>
      <div className="wf-node__label">{data.label?.trim() || kind.title}</div>
      <div className="wf-node__summary">{nodeSummary(type, data)}</div>
      {issues.length > 0 ? (
        <div id={issueTipId(id)} className="wf-node__tip" role="tooltip">
          <ul>
            {issues.map((issue, index) => (
              <li key={`${issue.code}-${index}`} data-severity={issue.severity}>
                {issue.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {kind.outputs ? <Handle type="source" position={Position.Right} className="wf-handle" /> : null}
    </div>
  );
}

export const WorkflowNodeView = memo(WorkflowNodeViewBase);
