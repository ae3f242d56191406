import type { NodeData, NodeType } from '../../api/builder-api';

export interface NodeKind {
  type: NodeType;
  /** The palette's name for it. */
  title: string;
  /** One line on what it does, shown under the palette button. */
  hint: string;
  /** The data a new node of this type starts with. */
  initial: () => NodeData;
  /** Whether edges may come in and go out (start has no way in, end no way out). */
  inputs: boolean;
  outputs: boolean;
}

/** The six node types in palette order, with what a new one starts as. */
export const NODE_KINDS: readonly NodeKind[] = [
  {
    type: 'start',
    title: 'Start',
    hint: 'Where a run begins',
    initial: () => ({ label: 'Start' }),
    inputs: false,
    outputs: true,
  },
  {
    type: 'agent',
    title: 'Agent',
    hint: 'A model with instructions and tools',
    initial: () => ({ label: 'Agent', system_prompt: 'You are a helpful assistant.', tools: [] }),
    inputs: true,
    outputs: true,
  },
  {
    type: 'router',
    title: 'Router',
    hint: 'Branches on a condition',
    initial: () => ({ label: 'Router' }),
    inputs: true,
    outputs: true,
  },
  {
    type: 'tool',
    title: 'Tool',
    hint: 'Calls one MCP tool',
    initial: () => ({ label: 'Tool', args: {} }),
    inputs: true,
    outputs: true,
  },
  {
    type: 'human',
    title: 'Human',
    hint: 'Pauses for an answer',
    initial: () => ({ label: 'Review', question: 'Does this look right?' }),
    inputs: true,
    outputs: true,
  },
  {
    type: 'end',
    title: 'End',
    hint: 'Where a run finishes',
    initial: () => ({ label: 'End' }),
    inputs: true,
    outputs: false,
  },
];

const BY_TYPE = new Map(NODE_KINDS.map((kind) => [kind.type, kind]));

/** The catalogue entry of a type; unknown types (a newer export) read as an agent-like box with both handles. */
export function kindOf(type: string): NodeKind {
  return BY_TYPE.get(type as NodeType) ?? { ...NODE_KINDS[1]!, type: type as NodeType, title: type };
}

/** The drag-and-drop payload type that carries a node type from the palette to the canvas. */
export const DRAG_MIME = 'application/x-agent-service-node-type';

export function isNodeType(value: string): value is NodeType {
  return BY_TYPE.has(value as NodeType);
}
