import type { LangGraphRunnableConfig } from '@langchain/langgraph';

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

/** What a human node's `interrupt` carries to whoever resumes the run; the resume value is the answer (a string). */
export interface HumanQuestion {
  node: string;
  question: string;
}
