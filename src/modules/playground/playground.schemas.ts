import { z } from 'zod';
import { WebUiSettings } from '../../http/web-ui-settings.js';

/** The playground's request and response shapes (spec "Playground resources"), for validation and OpenAPI. */

const metadata = z.record(z.string(), z.unknown());

export const Session = z
  .object({
    session_id: z.string(),
    name: z.string(),
    user_id: z.string(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    metadata,
  })
  .meta({ id: 'PlaygroundSession' });

export const SessionListItem = Session.extend({ message_count: z.number().int() }).meta({
  id: 'PlaygroundSessionListItem',
});

export const ToolCall = z
  .object({
    id: z.string(),
    name: z.string(),
    args: metadata,
    result: z.string().optional(),
    is_error: z.boolean().optional(),
  })
  .meta({ id: 'PlaygroundToolCall' });

export const Usage = z
  .object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() })
  .meta({ id: 'PlaygroundUsage' });

export const Message = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    content: z.string(),
    timestamp: z.iso.datetime(),
    tool_calls: z.array(ToolCall),
    cancelled: z.boolean().describe('The turn was stopped before its end; the content is what had come'),
    error: z.string().nullable().describe('The code of the error that ended the turn'),
    usage: Usage.optional(),
    latency_ms: z.number().int().nullable().optional(),
  })
  .meta({ id: 'PlaygroundMessage' });

export const SessionDetail = Session.extend({
  messages: z.array(Message),
  model: z.string().nullable(),
  total_tokens: z.number().int(),
}).meta({ id: 'PlaygroundSessionDetail' });

export const CreateSession = z
  .object({ name: z.string().max(200).optional(), metadata: metadata.optional() })
  .meta({ id: 'CreatePlaygroundSession' });

export const UpdateSession = z
  .object({ name: z.string().min(1).max(200).optional(), metadata: metadata.optional() })
  .meta({ id: 'UpdatePlaygroundSession' });

export const ChatRequest = z
  .object({
    session_id: z.string().min(1).max(64),
    message: z.string().min(1),
    stream: z.boolean().default(false),
  })
  .meta({ id: 'PlaygroundChatRequest' });

export const ChatResponse = z
  .object({
    message_id: z.string(),
    role: z.literal('assistant'),
    content: z.string(),
    timestamp: z.iso.datetime(),
    tool_calls: z.array(ToolCall),
    usage: Usage,
    cancelled: z.boolean(),
  })
  .meta({ id: 'PlaygroundChatResponse' });

export const Trace = z
  .object({
    trace_id: z.string(),
    span_id: z.string(),
    parent_span_id: z.string().nullable(),
    operation: z.string(),
    duration_ms: z.number().int(),
    status: z.enum(['ok', 'error', 'unset']),
    attributes: metadata,
    timestamp: z.iso.datetime().describe('When the span started'),
  })
  .meta({ id: 'PlaygroundTrace' });

export const LogEntry = z
  .object({
    timestamp: z.iso.datetime(),
    level: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR']),
    message: z.string(),
    attributes: metadata,
  })
  .meta({ id: 'PlaygroundLogEntry' });

export const Metrics = z
  .object({
    session_id: z.string(),
    message_count: z.number().int(),
    total_tokens: z.number().int(),
    average_latency_ms: z.number().int(),
    error_count: z.number().int(),
    tool_call_count: z.number().int(),
  })
  .meta({ id: 'PlaygroundMetrics' });

export const PlaygroundConfig = WebUiSettings.extend({ max_message_chars: z.number().int() }).meta({
  id: 'PlaygroundConfig',
});

export const sessionParams = z.object({ session_id: z.string().min(1).max(64) });
