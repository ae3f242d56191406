/**
 * The playground module's public API: chat sessions with the agent and the observability of their turns. Its
 * wires (the chat over JSON, server-sent events and WebSocket) call the service.
 */
export { createPlaygroundModule, type PlaygroundModuleDeps } from './playground.module.js';
export { PlaygroundErrorCode } from './playground.errors.js';
export { ChatRequest, ChatResponse } from './playground.schemas.js';
export {
  type AdmittedTurn,
  type ChatResponse as ChatResult,
  type PlaygroundEvent,
  PlaygroundService,
  SESSION_ATTRIBUTE,
} from './playground.service.js';
export type {
  PlaygroundLogsTable,
  PlaygroundMessagesTable,
  PlaygroundSessionsTable,
  PlaygroundSpansTable,
} from './playground.tables.js';
