export interface ConversationsTable {
  id: string;
  /** user:<id> or service_principal:<id>. */
  owner: string;
  title: string;
  message_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  created_at: string;
  updated_at: string;
  last_message_at: string | null;
}

export interface MessagesTable {
  id: string;
  conversation_id: string;
  /** Order within the conversation, from 1. */
  seq: number;
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** The content's words as full-text search indexes them (`searchKey` in src/db/full-text.ts). */
  content_key: string;
  /** JSON array of {id, name, arguments} for assistant messages that called tools. */
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  created_at: string;
}
