/** The conversations module's public API: conversations, their messages and ranked search. */
export { createConversationsModule } from './conversations.module.js';
export { toChatMessage, type ConversationsService, type NewMessage } from './conversations.service.js';
