import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';

/**
 * What a compiled workflow needs from outside: a model for agent nodes and tools for tool nodes. The service's run
 * implements it with its LLM port and MCP tools (authorised as the caller, streaming through `config.writer`);
 * generated code declares the same interface for the developer to implement. Human nodes need nothing from here:
 * they pause the graph with LangGraph's `interrupt`, and a resume answers them.
 */

/** A message of the run's transcript, which every agent node sees. `node` names the node that added it. */
export interface WorkflowMessage {
  role: 'user' | 'assistant';
  content: string;
  node?: string;
}

export interface AgentRequest {
  /** The agent node's id. */
  node: string;
  /** The model the node asks for, when it names one. */
  model?: string;
  systemPrompt: string;
  /** The MCP tools the model may call while it answers (the agent loops over tool calls itself). */
  tools: string[];
  messages: WorkflowMessage[];
}

export interface ToolRequest {
  /** The tool node's id. */
  node: string;
  tool: string;
  /** The node's arguments with their templates filled from the run state. */
  args: Record<string, unknown>;
}

export interface WorkflowRuntime {
  /** Answers the transcript as the agent node: the answer's text. */
  agent(request: AgentRequest, config: LangGraphRunnableConfig): Promise<string>;
  /** Calls the tool: its result as text. Throws when the tool fails, which fails the run. */
  callTool(request: ToolRequest, config: LangGraphRunnableConfig): Promise<string>;
}

/** What a human node's `interrupt` carries to whoever resumes the run; the resume value carries the answer. */
export interface HumanQuestion {
  node: string;
  question: string;
}

/** The longest answer a human node takes, in characters (Unicode code points, as JSON Schema's `maxLength`). */
export const HUMAN_ANSWER_MAX_LENGTH = 20_000;

/**
 * What a human node takes as its answer, the same on every way in (the builder's resume, `workflow_resume`, MCP task
 * updates and question retries) and in the generated code: any text of at most `HUMAN_ANSWER_MAX_LENGTH` characters,
 * the empty text included. Anything else is refused before the run changes.
 */
export const HumanAnswer = z.string().max(HUMAN_ANSWER_MAX_LENGTH);

/**
 * The resume value that answers a human node. The answer is wrapped because LangGraph.js 1.4 takes a falsy resume
 * value (the empty answer) as no input at all and fails the run; LangGraph for Python and later LangGraph.js take a
 * bare string, which a human node reads the same way.
 */
export interface HumanResume {
  answer: string;
}

export const humanResume = (answer: string): HumanResume => ({ answer });
