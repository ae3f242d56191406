import { z } from 'zod';

/**
 * The workflow interchange format: what the builder's canvas saves, what the API accepts and answers, what import
 * and export carry. It follows React Flow's node and edge shape. The format is versioned by `schema_version`;
 * input without it is read as the current version, and output always carries it.
 *
 * This schema checks shapes only. Whether a workflow makes sense (one start, reachable ends, routers with a default,
 * tools that exist…) is `validateWorkflow`'s report, so that a half-built workflow can still be parsed and checked.
 */

export const SCHEMA_VERSION = 1;

export const NODE_TYPES = ['start', 'agent', 'router', 'tool', 'human', 'end'] as const;
export type NodeType = (typeof NODE_TYPES)[number];

/** Node and edge ids: a letter, then letters, digits, `_` or `-`, so that they are also safe names in code. */
export const ID_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** Names the run state uses for itself; agent, tool and human nodes store their results under their own id. */
export const RESERVED_IDS = ['input', 'output', 'messages', 'state', 'vars', 'path'] as const;

export const LIMITS = { nodes: 200, edges: 500, tags: 20, text: 20_000 } as const;

const Id = z.string().regex(ID_PATTERN, 'a letter, then up to 63 letters, digits, "_" or "-"');
const Label = z.string().max(200);
const Text = z.string().max(LIMITS.text);

export const Position = z.object({ x: z.number().finite(), y: z.number().finite() }).meta({ id: 'WorkflowPosition' });

/**
 * Node data: the fields each type uses, plus whatever else a client keeps there (kept as it was sent). Fields a
 * type needs (a tool node's `tool`) are optional here and reported by validation, so drafts can be checked.
 */
const data = <T extends z.ZodRawShape>(shape: T) => z.looseObject({ label: Label.optional(), ...shape });

const AgentData = data({
  system_prompt: Text.optional().describe('The instructions the model gets before the conversation'),
  prompt: Text.optional().describe('Older name of system_prompt, read as it'),
  model: z.string().max(200).optional().describe("The model to ask; the service's model when absent"),
  tools: z.array(z.string().max(128)).max(64).optional().describe('MCP tools the model may call in this node'),
});
const ToolData = data({
  tool: z.string().max(128).optional().describe('The MCP tool to call'),
  args: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Arguments; strings may hold {{expression}} templates over the run state'),
});
const HumanData = data({ question: Text.optional().describe('What the run asks when it pauses here') });
const PlainData = data({});

const node = <T extends NodeType, D extends z.ZodType<Record<string, unknown>>>(type: T, nodeData: D) =>
  z.object({
    id: Id,
    type: z.literal(type),
    position: Position.optional().describe('Where the canvas shows the node; laid out when absent'),
    data: z.preprocess((value) => value ?? {}, nodeData),
  });

export const WorkflowNode = z
  .discriminatedUnion('type', [
    node('start', PlainData),
    node('agent', AgentData),
    node('router', PlainData),
    node('tool', ToolData),
    node('human', HumanData),
    node('end', PlainData),
  ])
  .meta({ id: 'WorkflowNode' });

export const WorkflowEdge = z
  .object({
    id: Id,
    source: Id,
    target: Id,
    label: Label.optional(),
    data: z
      .looseObject({
        condition: z
          .string()
          .max(1000)
          .optional()
          .describe("On a router's edge: when this branch is taken. The router's one edge without it is the default"),
      })
      .optional(),
  })
  .meta({ id: 'WorkflowEdge' });

const Tags = z.array(z.string().trim().min(1).max(50)).max(LIMITS.tags);

/** A workflow as clients send it (create, update, validate, generate, import). */
export const WorkflowDefinitionInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    description: z.string().max(2000).optional(),
    tags: Tags.optional(),
    schema_version: z.literal(SCHEMA_VERSION).optional(),
    nodes: z.array(WorkflowNode).max(LIMITS.nodes),
    edges: z.array(WorkflowEdge).max(LIMITS.edges),
  })
  .meta({ id: 'WorkflowDefinitionInput' });

export type WorkflowNode = z.output<typeof WorkflowNode>;
export type WorkflowEdge = z.output<typeof WorkflowEdge>;
export type AgentNode = Extract<WorkflowNode, { type: 'agent' }>;
export type ToolNode = Extract<WorkflowNode, { type: 'tool' }>;
export type HumanNode = Extract<WorkflowNode, { type: 'human' }>;

/** A workflow in its stored and answered form: every optional field filled, older field names read. */
export interface Workflow {
  name: string;
  description: string;
  tags: string[];
  schema_version: typeof SCHEMA_VERSION;
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
}

export const DEFAULT_QUESTION = 'How should the workflow go on?';

/** Fills what input may leave out and reads older field names (`prompt` for `system_prompt`). */
export function normalizeWorkflow(input: z.output<typeof WorkflowDefinitionInput>): Workflow {
  return {
    name: input.name,
    description: input.description ?? '',
    tags: [...new Set(input.tags ?? [])],
    schema_version: SCHEMA_VERSION,
    nodes: input.nodes.map((n) => {
      if (n.type !== 'agent' || n.data.prompt === undefined) return n;
      const { prompt, ...rest } = n.data;
      return { ...n, data: { ...rest, system_prompt: rest.system_prompt ?? prompt } };
    }),
    edges: input.edges,
  };
}

/** Parses and normalizes a workflow; throws the zod error on a bad shape. */
export const parseWorkflow = (input: unknown): Workflow => normalizeWorkflow(WorkflowDefinitionInput.parse(input));

/** The system prompt of an agent node. */
export const systemPromptOf = (n: AgentNode): string => n.data.system_prompt ?? n.data.prompt ?? '';

/** The question a human node asks. */
export const questionOf = (n: HumanNode): string => n.data.question?.trim() || DEFAULT_QUESTION;

/** A router's branch condition, or undefined for the default branch (an empty condition counts as none). */
export const conditionOf = (e: WorkflowEdge): string | undefined => {
  const condition = e.data?.condition?.trim();
  return condition ? condition : undefined;
};
