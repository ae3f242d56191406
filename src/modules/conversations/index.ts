/** The conversations module's public API: conversations, their messages and ranked search. */
export { ConversationsService, toChatMessage, type NewMessage } from './conversations.service.js';
