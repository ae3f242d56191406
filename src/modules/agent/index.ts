/**
 * The agent module's public API: the Agent port (one turn of a conversation as a stream of events) and the
 * chat-turn service every chat entry point calls to admit, run and stream a turn.
 */
export {
  type Agent,
  type AgentEvent,
  type AgentTurn,
  type MessageResponse,
  runToCompletion,
  toUsage,
} from './agent.port.js';
export {
  AGENT_NAME,
  type ModelInfo,
  NO_TRACER,
  failSpan,
  inModelSpan,
  inToolSpan,
  startTurnSpan,
  usageAttributes,
} from './agent.telemetry.js';
export { type AgentParts, type BuiltAgent, createAgentModule } from './agent.module.js';
export {
  CHAT_PERMISSION,
  type ChatAdmission,
  type ChatTurnDeps,
  type ChatTurnEvent,
  type ChatTurnRequest,
  ChatTurnService,
} from './chat-turn.service.js';
