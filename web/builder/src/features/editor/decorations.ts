import { createContext, useContext } from 'react';
import type { Issue } from '../../api/builder-api';

/**
 * What the canvas shows on top of the workflow without it being part of it: validation issues per node and edge,
 * and the progress of a run. Kept out of node data so that it never ends up saved.
 */
export interface Decorations {
  nodeIssues: ReadonlyMap<string, Issue[]>;
  edgeIssues: ReadonlyMap<string, Issue[]>;
  /** Nodes whose edges out are router branches. */
  routers: ReadonlySet<string>;
  /** The node a run is in now. */
  running: string | null;
  /** Nodes the shown run has passed through. */
  visited: ReadonlySet<string>;
  /** The steps between nodes the shown run took, as `source>target`. */
  travelled: ReadonlySet<string>;
  /** Selects a node or edge (from an edge's label, which sits outside the edge's own hit area). */
  select: (id: string) => void;
}

export const EMPTY_DECORATIONS: Decorations = {
  nodeIssues: new Map(),
  edgeIssues: new Map(),
  routers: new Set(),
  running: null,
  visited: new Set(),
  travelled: new Set(),
  select: () => undefined,
};

export const DecorationsContext = createContext<Decorations>(EMPTY_DECORATIONS);

export const useDecorations = () => useContext(DecorationsContext);

/** The worse of an element's issues, or null when it has none. */
export function severityOf(issues: readonly Issue[] | undefined): 'error' | 'warning' | null {
  if (!issues || issues.length === 0) return null;
  return issues.some((i) => i.severity === 'error') ? 'error' : 'warning';
}

/** Groups a report's issues by the node and the edge they name. */
export function issuesByElement(issues: readonly Issue[]): {
  nodeIssues: Map<string, Issue[]>;
  edgeIssues: Map<string, Issue[]>;
} {
  const nodeIssues = new Map<string, Issue[]>();
  const edgeIssues = new Map<string, Issue[]>();
  for (const issue of issues) {
    if (issue.edge_id) edgeIssues.set(issue.edge_id, [...(edgeIssues.get(issue.edge_id) ?? []), issue]);
    else if (issue.node_id) nodeIssues.set(issue.node_id, [...(nodeIssues.get(issue.node_id) ?? []), issue]);
  }
  return { nodeIssues, edgeIssues };
}
