import { z } from 'zod';
import { equals } from './expression.js';
import { type Workflow, WorkflowEdge, WorkflowNode } from './schema.js';

/**
 * What changed between two versions of a workflow, for the builder's history view: which nodes and edges came and
 * went, and which fields of the others changed. Nodes and edges are matched by id, so moving or renaming a step
 * reads as a change, not as a removal and an addition.
 */

/** One changed value. `before` or `after` is absent (undefined, left out of JSON) when the field was not set. */
export interface FieldChange {
  /** A dotted path to the leaf that changed (`data.system_prompt`, `position.x`); arrays count as one leaf. */
  path: string;
  before: unknown;
  after: unknown;
}

export interface ItemChange {
  id: string;
  changes: FieldChange[];
}

export interface WorkflowDiff {
  /** Changes to the workflow's own fields: name, description, tags. */
  fields: FieldChange[];
  nodes: { added: WorkflowNode[]; removed: WorkflowNode[]; changed: ItemChange[] };
  edges: { added: WorkflowEdge[]; removed: WorkflowEdge[]; changed: ItemChange[] };
  /** Only positions changed: the layout moved but nothing the run does. */
  layout_only: boolean;
  /** The two versions are the same. */
  unchanged: boolean;
}

const FieldChangeSchema = z
  .object({
    path: z.string().describe('A dotted path to the changed field; arrays are compared and reported whole'),
    before: z.unknown().describe('The old value; absent when the field was not set'),
    after: z.unknown().describe('The new value; absent when the field is no longer set'),
  })
  .meta({ id: 'WorkflowFieldChange' });

const ItemChangeSchema = z
  .object({ id: z.string(), changes: z.array(FieldChangeSchema) })
  .meta({ id: 'WorkflowItemChange' });

/** The diff as the API answers it. */
export const WorkflowDiffSchema = z
  .object({
    fields: z.array(FieldChangeSchema).describe('Changes to name, description and tags'),
    nodes: z.object({
      added: z.array(WorkflowNode),
      removed: z.array(WorkflowNode),
      changed: z.array(ItemChangeSchema),
    }),
    edges: z.object({
      added: z.array(WorkflowEdge),
      removed: z.array(WorkflowEdge),
      changed: z.array(ItemChangeSchema),
    }),
    layout_only: z.boolean().describe('Only node positions changed: nothing a run does'),
    unchanged: z.boolean().describe('The two versions are the same'),
  })
  .meta({ id: 'WorkflowDiff' });

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keys in `after`'s order, then those only `before` has, so the order follows the newer version. */
const keysOf = (before: Record<string, unknown>, after: Record<string, unknown>): string[] => [
  ...new Set([...Object.keys(after), ...Object.keys(before)]),
];

/**
 * The leaves that differ between two values, walking into objects both sides have. An object on one side only, or
 * an array, is compared and reported whole at its own path.
 */
function changesOf(before: unknown, after: unknown, path: string): FieldChange[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    return keysOf(before, after).flatMap((key) => changesOf(before[key], after[key], path ? `${path}.${key}` : key));
  }
  return equals(before, after) ? [] : [{ path, before, after }];
}

/** First item for each id: validation reports duplicates, and a diff of such a draft still answers something. */
function byId<T extends { id: string }>(items: T[]): Map<string, T> {
  const map = new Map<string, T>();
  for (const item of items) if (!map.has(item.id)) map.set(item.id, item);
  return map;
}

function diffItems<T extends { id: string }>(
  before: T[],
  after: T[],
): { added: T[]; removed: T[]; changed: ItemChange[] } {
  const old = byId(before);
  const current = byId(after);
  const added: T[] = [];
  const changed: ItemChange[] = [];
  for (const [id, item] of current) {
    const previous = old.get(id);
    if (!previous) {
      added.push(item);
      continue;
    }
    const { id: _old, ...was } = previous;
    const { id: _new, ...is } = item;
    const changes = changesOf(was, is, '');
    if (changes.length > 0) changed.push({ id, changes });
  }
  const removed = [...old.values()].filter((item) => !current.has(item.id));
  return { added, removed, changed };
}

const isLayout = (change: FieldChange): boolean => change.path === 'position' || change.path.startsWith('position.');

/** Compares two versions of a workflow. */
export function diffWorkflows(before: Workflow, after: Workflow): WorkflowDiff {
  const fields = (['name', 'description', 'tags'] as const).flatMap((key) =>
    equals(before[key], after[key]) ? [] : [{ path: key, before: before[key], after: after[key] }],
  );
  const nodes = diffItems(before.nodes, after.nodes);
  const edges = diffItems(before.edges, after.edges);
  const structural =
    fields.length > 0 ||
    nodes.added.length > 0 ||
    nodes.removed.length > 0 ||
    edges.added.length > 0 ||
    edges.removed.length > 0 ||
    edges.changed.length > 0;
  const nodeChanges = nodes.changed.flatMap((c) => c.changes);
  const unchanged = !structural && nodeChanges.length === 0;
  return {
    fields,
    nodes,
    edges,
    layout_only: !structural && nodeChanges.length > 0 && nodeChanges.every(isLayout),
    unchanged,
  };
}
