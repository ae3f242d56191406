import { needsOf } from '../src/ports/connected-tools.js';
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';
import type { ChatMessage, LlmProvider, ToolCall, ToolSpec, Usage } from '../src/adapters/llm/port.js';
import type { Logger } from '../src/logger.js';
import type { ToolExecutor } from '../src/mcp/tools.js';
import type { Tracer } from '@opentelemetry/api';
import {
  type Agent,
  type AgentEvent,
  type AgentTurn,
  NO_TRACER,
  inModelSpan,
  inToolSpan,
  toUsage,
} from '../src/modules/agent/index.js';
import { subjectOf } from '../src/ports/subjects.js';
import { type ConversationsService, type NewMessage, toChatMessage } from '../src/modules/conversations/index.js';
import type { Checkpointer } from './checkpointer.js';

const SYSTEM_PROMPT =
  'You are the assistant of Agent Service. Answer clearly and concisely. When tools are offered, use them to look ' +
  'things up instead of guessing, and say which sources you used.';

const DEFAULT_MAX_STEPS = 6;
const ZERO: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

const add = (a: Usage, b: Usage): Usage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/** New messages to append, or (realigning with the recorded conversation) the whole history to start over from. */
type MessagesUpdate = ChatMessage[] | { replace: ChatMessage[] };

/**
 * The conversation's state, checkpointed per conversation (thread = conversation id): the whole message history
 * accumulates across turns; `steps` and `usage` are per turn (each turn's input resets them).
 */
const AgentState = Annotation.Root({
  messages: Annotation<ChatMessage[], MessagesUpdate>({
    reducer: (a, b) => (Array.isArray(b) ? a.concat(b) : b.replace),
    default: () => [],
  }),
  steps: Annotation<number>(),
  usage: Annotation<Usage>(),
});
type State = typeof AgentState.State;
type Update = typeof AgentState.Update;

/** What nodes stream to the turn's caller through LangGraph's custom stream. */
type Emitted = Extract<AgentEvent, { type: 'delta' | 'tool_call' | 'tool_result' }>;

function resultText(result: { content?: unknown[] }): string {
  return (result.content ?? [])
    .map((part) => (typeof part === 'object' && part && 'text' in part ? String(part.text) : ''))
    .join('\n');
}

export interface AgentDeps {
  llm: LlmProvider;
  conversations: ConversationsService;
  tools: ToolExecutor;
  checkpointer: Checkpointer;
  logger: Logger;
  /** Records a span per model call and per tool call (none without one). */
  tracer?: Tracer;
}

/** Builds this turn's graph: the model node and the tool node in a loop, bounded by the turn's step budget. */
function buildGraph(deps: AgentDeps, turn: AgentTurn, tools: ToolSpec[], maxSteps: number) {
  const emit = (config: LangGraphRunnableConfig, event: Emitted) => config.writer?.(event);
  const offered = new Set(tools.map((t) => t.name));
  const tracer = deps.tracer ?? NO_TRACER;
  const model = { provider: deps.llm.provider, model: deps.llm.model };

  const callModel = async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const offerTools = tools.length > 0 && state.steps < maxSteps;
    let text = '';
    let calls: ToolCall[] = [];
    const { usage } = await inModelSpan(
      tracer,
      turn.traceContext,
      model,
      async () => {
        let usage = ZERO;
        for await (const event of deps.llm.stream({
          messages: [{ role: 'system', content: SYSTEM_PROMPT }, ...state.messages],
          ...(offerTools && { tools }),
          ...(turn.signal && { signal: turn.signal }),
        })) {
          if (event.type === 'delta') {
            text += event.text;
            emit(config, { type: 'delta', text: event.text });
          } else if (event.type === 'tool_calls') calls = event.calls;
          else usage = event.usage;
        }
        return { usage };
      },
      turn.signal,
    );
    // A model may ask for tools it was not offered (past the step budget, or in chat mode); acting on that would
    // let it loop until the recursion limit fails the whole turn, so its text is the answer.
    if (!offerTools) calls = [];
    const reply: ChatMessage = { role: 'assistant', content: text, ...(calls.length > 0 && { toolCalls: calls }) };
    return { messages: [reply], steps: state.steps + 1, usage: add(state.usage, usage) };
  };

  const runTools = async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const last = state.messages.at(-1);
    const calls = last?.role === 'assistant' ? (last.toolCalls ?? []) : [];
    const results: ChatMessage[] = [];
    for (const call of calls) {
      emit(config, { type: 'tool_call', name: call.name, args: call.arguments });
      if (!offered.has(call.name)) {
        // Only this turn's offer may run: the executor would also run tools kept from the agent (agent_chat would
        // start a nested turn). The model learns it and can do without.
        const content = `The tool ${call.name} is not available here.`;
        emit(config, { type: 'tool_result', name: call.name, content, isError: true });
        results.push({ role: 'tool', content, toolCallId: call.id, name: call.name });
        continue;
      }
      const result = await inToolSpan(
        tracer,
        turn.traceContext,
        { name: call.name, callId: call.id },
        () => deps.tools.execute(call.name, call.arguments, turn.caller, turn.signal ? { signal: turn.signal } : {}),
        turn.signal,
      );
      const content = resultText(result);
      const needs = needsOf(result);
      emit(config, {
        type: 'tool_result',
        name: call.name,
        content,
        isError: result.isError === true,
        ...(needs && { needs }),
      });
      results.push({ role: 'tool', content, toolCallId: call.id, name: call.name });
    }
    return { messages: results };
  };

  return new StateGraph(AgentState)
    .addNode('model', callModel)
    .addNode('tools', runTools)
    .addEdge(START, 'model')
    .addConditionalEdges(
      'model',
      (state: State) => {
        const last = state.messages.at(-1);
        return last?.role === 'assistant' && last.toolCalls?.length ? 'tools' : END;
      },
      ['tools', END],
    )
    .addEdge('tools', 'model')
    .compile({ checkpointer: deps.checkpointer });
}

/**
 * The agent as a LangGraph graph over the model and the MCP tools the caller may use. Each turn streams tokens and
 * tool events, is checkpointed under its conversation (so the next turn, on any instance, continues it), and is
 * recorded in the conversation with its token counts.
 */
export function createAgent(deps: AgentDeps): Agent {
  return {
    async *run(turn: AgentTurn): AsyncIterable<AgentEvent> {
      const subject = subjectOf(turn.caller);
      const conversation = turn.conversationId
        ? await deps.conversations.access(subject, turn.conversationId, 'owner')
        : await deps.conversations.create(subject, turn.message);
      yield { type: 'started', conversationId: conversation.id };

      const maxSteps = turn.maxSteps ?? DEFAULT_MAX_STEPS;
      const tools = turn.mode === 'agent' ? await deps.tools.specsFor(turn.caller) : [];
      const graph = buildGraph(deps, turn, tools, maxSteps);
      const config = { configurable: { thread_id: conversation.id } };
      const checkpointed = ((await graph.getState(config)).values as Partial<State>).messages?.length ?? 0;
      // A turn cancelled, failed or cut off by a restart after LangGraph checkpointed part of it (its user message,
      // a tool call not yet answered) was never recorded. The recorded conversation is the truth: the model must
      // not see such remains, and an unanswered tool call would make an OpenAI-compatible API refuse every later
      // turn of the conversation.
      const history =
        checkpointed === conversation.messageCount
          ? undefined
          : (await deps.conversations.messages(conversation.id)).map(toChatMessage);
      const before = history?.length ?? checkpointed;

      const userMessage: ChatMessage = { role: 'user', content: turn.message };
      const stream = await graph.stream(
        { messages: history ? { replace: [...history, userMessage] } : [userMessage], steps: 0, usage: ZERO },
        {
          ...config,
          streamMode: 'custom',
          recursionLimit: maxSteps * 2 + 3,
          ...(turn.signal && { signal: turn.signal }),
        },
      );
      for await (const chunk of stream) yield chunk as Emitted;

      const state = (await graph.getState(config)).values as State;
      const produced = state.messages.slice(before + 1);
      const usage = state.usage;
      const answer = produced.filter((m) => m.role === 'assistant').at(-1)?.content ?? '';
      const records: NewMessage[] = [
        { ...userMessage, promptTokens: usage.promptTokens },
        ...produced.map((m, i) => (i === produced.length - 1 ? { ...m, completionTokens: usage.completionTokens } : m)),
      ];
      await deps.conversations.append(conversation.id, records);
      yield {
        type: 'done',
        response: { response: answer, conversation_id: conversation.id, model: deps.llm.model, usage: toUsage(usage) },
      };
    },
  };
}
