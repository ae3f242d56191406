import type { ToolDefinition } from '../src/mcp/tools.js';
import { agentChat } from './agent_chat.js';
import { chat } from './chat.js';
import { conversationGet } from './conversation_get.js';
import { conversationSearch } from './conversation_search.js';
import { searchWeb } from './search_web.js';
import { workflowResume, workflowRun } from './workflow_run.js';
import { workflowRunCancel, workflowRunView } from './workflow_run_view.js';

/** Every tool the service offers, in the order clients list them. A new tool is one file here plus one line. */
export const TOOLS: ToolDefinition[] = [
  chat,
  searchWeb,
  agentChat,
  conversationGet,
  conversationSearch,
  workflowRun,
  workflowResume,
  workflowRunView,
  workflowRunCancel,
];
