import { ID_PATTERN, NODE_TYPES, type Workflow, type WorkflowDefinition } from '../../api/builder-api';
import { downloadText, slug } from '../../ui/download';

/** A workflow's definition without what the service adds (id, version, dates), as export writes it. */
export function definitionOf(workflow: Workflow | WorkflowDefinition): WorkflowDefinition {
  return {
    name: workflow.name,
    description: workflow.description ?? '',
    tags: workflow.tags ?? [],
    schema_version: 1,
    nodes: workflow.nodes,
    edges: workflow.edges,
  };
}

/** Downloads a workflow as `<name>.workflow.json`, the file import reads back. */
export function exportWorkflow(definition: WorkflowDefinition): void {
  downloadText(
    `${slug(definition.name)}.workflow.json`,
    `${JSON.stringify(definition, null, 2)}\n`,
    'application/json',
  );
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads an imported file. Only the structure the canvas needs is checked here (a name, nodes with an id and a
 * known type, edges with ids and ends); whether the workflow makes sense is the service's validation, shown once
 * it is open. Throws an Error whose message says what is wrong with the file.
 */
export function parseWorkflowFile(text: string, fileName: string): WorkflowDefinition {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${fileName} is not JSON.`);
  }
  if (!isRecord(value)) throw new Error(`${fileName} does not hold a workflow object.`);
  if (!Array.isArray(value.nodes) || !Array.isArray(value.edges)) {
    throw new Error(`${fileName} has no "nodes" and "edges" lists, so it is not a workflow.`);
  }
  for (const node of value.nodes as unknown[]) {
    if (!isRecord(node) || typeof node.id !== 'string' || !ID_PATTERN.test(node.id)) {
      throw new Error(`${fileName} has a node without a valid id.`);
    }
    if (typeof node.type !== 'string' || !(NODE_TYPES as readonly string[]).includes(node.type)) {
      throw new Error(`Node “${node.id}” has an unknown type. Types are ${NODE_TYPES.join(', ')}.`);
    }
  }
  for (const edge of value.edges as unknown[]) {
    if (
      !isRecord(edge) ||
      typeof edge.id !== 'string' ||
      typeof edge.source !== 'string' ||
      typeof edge.target !== 'string'
    ) {
      throw new Error(`${fileName} has an edge without an id, a source or a target.`);
    }
  }
  const fallbackName = fileName.replace(/(\.workflow)?\.json$/i, '') || 'Imported workflow';
  const definition = value as unknown as WorkflowDefinition;
  return {
    ...definition,
    name: typeof value.name === 'string' && value.name.trim() ? value.name : fallbackName,
    nodes: definition.nodes.map((n) => ({ ...n, data: isRecord(n.data) ? n.data : {} })),
  };
}
