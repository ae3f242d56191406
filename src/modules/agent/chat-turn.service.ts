import type { ToolNeeds } from '../../ports/connected-tools.js';
import { type AppError, toAppError } from '../../errors.js';
import type { Caller } from '../../ports/caller.js';
import type { Shutdown } from '../../ports/shutdown.js';
import { type Context, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { NewMessage } from '../conversations/index.js';
import { type Agent, type AgentTurn, type MessageResponse, runToCompletion, toUsage } from './agent.port.js';
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  type ModelInfo,
  NO_TRACER,
  failSpan,
  startTurnSpan,
  turnUsageOf,
  usageAttributes,
} from './agent.telemetry.js';
import { StoppedTurn } from './stopped-turn.js';
import { type LinkedSignal, linkSignals } from '../../signals.js';

const UNKNOWN_MODEL: ModelInfo = { provider: 'unknown', model: 'unknown' };

function endTurnSpan(span: Span, response: MessageResponse): void {
  span.setAttributes({
    [ATTR_GEN_AI_CONVERSATION_ID]: response.conversation_id,
    ...usageAttributes({
      promptTokens: response.usage.prompt_tokens,
      completionTokens: response.usage.completion_tokens,
      totalTokens: response.usage.total_tokens,
    }),
  });
  span.setStatus({ code: SpanStatusCode.OK });
}

/**
 * What the chat-turn service needs of the policy point: whether the caller may chat at all (403 if not) and
 * whether the turn fits in the caller's tool-call budget (429 beyond it). It throws the refusal as an AppError.
 */
export interface ChatAdmission {
  admitToolCall(caller: Caller, tool: string): Promise<void>;
}

/** The permission a chat turn needs: that of the `chat` tool, whichever entry point it comes through. */
export const CHAT_PERMISSION = 'chat';

/** One chat turn as an entry point receives it. */
export interface ChatTurnRequest {
  caller: Caller;
  /** The caller's message. */
  query: string;
  /** Extra context for the model, sent to it with the message. */
  context?: Record<string, unknown>;
  /** Continue this conversation; a new one is started when absent. */
  conversationId?: string;
  /** Whether the model may call the tools the caller may use (the default) or answers alone. */
  useTools?: boolean;
  /** Upper bound on model ↔ tool round trips. */
  maxSteps?: number;
  /** Attributes of the turn's span (the playground names its session, which keeps the trace). */
  traceAttributes?: Record<string, string>;
  /**
   * Keep the turn in its conversation as far as it came when the caller stops it, so that the next turn continues
   * from what the caller saw (the playground shows a stopped answer). Otherwise nothing of a stopped turn is kept.
   */
  keepStopped?: boolean;
}

/**
 * What a streamed turn emits, in the spec's stream event names: `content_start`, `content_delta`…,
 * `content_end`, `message_complete`; the tool events in between where the model calls tools. A turn that fails
 * ends with `error` (its AppError, for the wire to render), and so does one the service stops at shutdown (the
 * 503 `SERVICE_STOPPING`); a turn cancelled by its caller ends with `message_cancelled`: what it used until then
 * (the model's count of the calls that answered, the provider's estimate of the one stopped half-way).
 */
export type ChatTurnEvent =
  | { type: 'content_start' }
  | { type: 'content_delta'; delta: string }
  | { type: 'tool_call'; name: string; args: Record<string, unknown> }
  | { type: 'tool_result'; name: string; content: string; isError: boolean; needs?: ToolNeeds }
  | { type: 'content_end' }
  | ({ type: 'message_complete' } & Omit<MessageResponse, 'response'>)
  | { type: 'message_cancelled'; conversation_id?: string; usage: MessageResponse['usage'] }
  | { type: 'error'; error: AppError };

/**
 * Keeps a turn its caller stopped in its conversation (see `ChatTurnRequest.keepStopped`). It never rejects: a
 * turn that could not be kept is reported where the service logs, and its stream ends all the same.
 */
export type KeepStoppedTurn = (caller: Caller, conversationId: string, messages: NewMessage[]) => Promise<void>;

export interface ChatTurnDeps {
  /** Late-bound: the agent is started after the entry points are wired. */
  agent: () => Agent;
  admission: ChatAdmission;
  /** Records an `invoke_agent` span per turn, parent of its model and tool spans (none without one). */
  tracer?: Tracer;
  /** The model the turns use, for their spans. */
  model?: ModelInfo;
  /**
   * The service's shutdown: once it begins no turn is admitted, and a turn still running at its deadline stops and
   * ends with the service-stopping error. Without it, turns run on until their callers stop them.
   */
  shutdown?: Shutdown;
  /** Where a stopped turn is kept when its request asks for it; without it, none is. */
  keepStopped?: KeepStoppedTurn;
}

/** The context rides with the message as a JSON appendix the model can read. */
function withContext(query: string, context: Record<string, unknown> | undefined): string {
  return context && Object.keys(context).length > 0
    ? `${query}\n\nContext:\n${JSON.stringify(context, null, 2)}`
    : query;
}

function agentTurn(request: ChatTurnRequest, signal: AbortSignal | undefined, traceContext: Context): AgentTurn {
  return {
    caller: request.caller,
    message: withContext(request.query, request.context),
    // Every chat entry point offers the caller's tools unless asked not to.
    mode: request.useTools === false ? 'chat' : 'agent',
    ...(request.conversationId && { conversationId: request.conversationId }),
    ...(request.maxSteps !== undefined && { maxSteps: request.maxSteps }),
    ...(signal && { signal }),
    traceContext,
  };
}

/**
 * Chat turns for every entry point (REST `/mcp/message` and `/message`, the MCP `chat` and `agent_chat` tools,
 * the playground): who may take one, running one to its answer, and streaming one as typed events. The entry
 * points parse their input, call this, and render what it returns in their own format.
 */
export class ChatTurnService {
  constructor(private readonly deps: ChatTurnDeps) {}

  /**
   * Whether the caller may take a turn now; throws the policy's 403 or 429 if not, and the 503 `SERVICE_STOPPING`
   * once the service has begun to stop (a turn started now would likely be cut).
   */
  async admit(caller: Caller): Promise<void> {
    const stopping = this.deps.shutdown?.stopping;
    if (stopping?.aborted) throw toAppError(stopping.reason);
    await this.deps.admission.admitToolCall(caller, CHAT_PERMISSION);
  }

  /**
   * Runs an admitted turn to its end and returns the Message response. A turn still running at the shutdown's
   * deadline stops and throws the service-stopping error.
   */
  async complete(request: ChatTurnRequest, signal?: AbortSignal): Promise<MessageResponse> {
    const { span, context } = this.#startSpan(request);
    const { signal: turnSignal, release } = this.#untilDeadline(signal);
    try {
      const response = await runToCompletion(this.deps.agent(), agentTurn(request, turnSignal, context));
      endTurnSpan(span, response);
      return response;
    } catch (error) {
      failSpan(span, error, turnSignal?.aborted === true);
      throw this.#stoppedByShutdown(signal) ?? error;
    } finally {
      release();
      span.end();
    }
  }

  /**
   * The caller's signal, also aborted at the shutdown's deadline: the one decision to finish a turn or stop it.
   * Released when the turn ends (the deadline outlives every turn).
   */
  #untilDeadline(signal: AbortSignal): LinkedSignal;
  #untilDeadline(signal: AbortSignal | undefined): { signal: AbortSignal | undefined; release: () => void };
  #untilDeadline(signal: AbortSignal | undefined): { signal: AbortSignal | undefined; release: () => void } {
    const deadline = this.deps.shutdown?.deadline;
    if (!deadline) return { signal, release: () => undefined };
    // Never the deadline itself, even without a caller's signal: what the turn hangs on its signal (the graph's own
    // links, the model call's) must go with the turn, not stay on the service's signal for good.
    return linkSignals([signal, deadline]);
  }

  /** The service-stopping error, when the shutdown's deadline (not the caller) stopped the turn. */
  #stoppedByShutdown(signal: AbortSignal | undefined): AppError | undefined {
    const deadline = this.deps.shutdown?.deadline;
    return deadline?.aborted && !signal?.aborted ? toAppError(deadline.reason) : undefined;
  }

  #startSpan(request: ChatTurnRequest) {
    return startTurnSpan(this.deps.tracer ?? NO_TRACER, this.deps.model ?? UNKNOWN_MODEL, {
      ...request.traceAttributes,
      ...(request.conversationId && { [ATTR_GEN_AI_CONVERSATION_ID]: request.conversationId }),
    });
  }

  /**
   * Streams an admitted turn. Aborting `signal` (the client left, or stopped the answer) cancels it: the stream
   * ends with `message_cancelled` and its usage, and the turn is kept in its conversation as far as it came only
   * when the request asks for it. When the service stops, the turn may finish within the drain; still running at
   * the shutdown's deadline, it is cancelled but ends with the service-stopping `error`, so that its client can
   * tell the cut from an answer. Never throws: a failure is the last event.
   */
  async *stream(request: ChatTurnRequest, signal: AbortSignal): AsyncGenerator<ChatTurnEvent, void, undefined> {
    yield { type: 'content_start' };
    const { span, context } = this.#startSpan(request);
    const { signal: turnSignal, release } = this.#untilDeadline(signal);
    let finished = false;
    let conversationId = request.conversationId;
    const soFar = new StoppedTurn();
    try {
      for await (const event of this.deps.agent().run(agentTurn(request, turnSignal, context))) {
        switch (event.type) {
          case 'delta':
            soFar.delta(event.text);
            yield { type: 'content_delta', delta: event.text };
            break;
          case 'tool_call':
            soFar.toolCall(event.name, event.args);
            yield { type: 'tool_call', name: event.name, args: event.args };
            break;
          case 'tool_result':
            soFar.toolResult(event.name, event.content);
            yield {
              type: 'tool_result',
              name: event.name,
              content: event.content,
              isError: event.isError,
              ...(event.needs && { needs: event.needs }),
            };
            break;
          case 'done': {
            const { conversation_id, model, usage } = event.response;
            endTurnSpan(span, event.response);
            finished = true;
            yield { type: 'content_end' };
            yield { type: 'message_complete', conversation_id, model, usage };
            break;
          }
          case 'started':
            // Told to the span as the turn ends: the span is made once the model has been asked.
            conversationId = event.conversationId;
            break;
        }
      }
    } catch (thrown) {
      finished = true;
      const error = turnSignal.aborted ? this.#stoppedByShutdown(signal) : toAppError(thrown);
      if (error) {
        failSpan(span, thrown, turnSignal.aborted);
        yield { type: 'error', error };
        return;
      }
      // Stopped by its caller: the turn used what its model calls used until then, in its trace as in its answer.
      const usage = await turnUsageOf(context);
      span.setAttributes(usageAttributes(usage));
      failSpan(span, thrown, true);
      if (request.keepStopped && conversationId && this.deps.keepStopped) {
        const asked = withContext(request.query, request.context);
        await this.deps.keepStopped(request.caller, conversationId, soFar.messages(asked, usage));
      }
      yield {
        type: 'message_cancelled',
        ...(conversationId && { conversation_id: conversationId }),
        usage: toUsage(usage),
      };
    } finally {
      release();
      if (conversationId) span.setAttribute(ATTR_GEN_AI_CONVERSATION_ID, conversationId);
      // Stopped before its end: the client left, or the consumer stopped reading.
      if (!finished) failSpan(span, new Error('cancelled'), true);
      span.end();
    }
  }
}
