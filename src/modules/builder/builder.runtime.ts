import type { LangGraphRunnableConfig, interrupt } from '@langchain/langgraph';
import type { ChatMessage, LlmProvider, ToolCall, ToolSpec } from '../../adapters/llm/port.js';
import type { Caller } from '../../ports/caller.js';
import { answerOf } from '../../../workflows/plan.js';
import type { AgentRequest, HumanQuestion, ToolRequest, WorkflowRuntime } from '../../../workflows/runtime.js';
import type { WorkflowTools } from './builder.ports.js';

/** How many model calls one agent node may make while it works through tool calls. */
const MAX_AGENT_STEPS = 6;

/** What a node streams to the run's caller besides the node events (`config.writer`, LangGraph's custom stream). */
export type RuntimeEvent =
  | { type: 'token'; node: string; text: string }
  | { type: 'tool_call'; node: string; name: string; args: Record<string, unknown> }
  | { type: 'tool_result'; node: string; name: string; content: string; is_error: boolean };

/** A tool node's call failed: the run fails, naming the node and the tool's message. */
export class WorkflowToolError extends Error {
  constructor(
    readonly node: string,
    readonly tool: string,
    message: string,
  ) {
    super(`The tool ${tool} failed in node ${node}: ${message}`);
    this.name = 'WorkflowToolError';
  }
}

export interface RuntimeDeps {
  llm: LlmProvider;
  tools: WorkflowTools;
  /** LangGraph's `interrupt`, from the LangGraph the run was loaded with. */
  interrupt: typeof interrupt;
}

/**
 * The service's workflow runtime for one caller: agent nodes ask the service's model, with the node's tools that
 * the caller may call, streaming tokens and tool calls; tool nodes call MCP tools as the caller.
 */
export function serviceRuntime(deps: RuntimeDeps, caller: Caller): WorkflowRuntime {
  let permitted: Promise<ToolSpec[]> | undefined;
  const specsFor = async (names: string[]) => {
    permitted ??= deps.tools.list(caller);
    const wanted = new Set(names);
    return (await permitted).filter((spec) => wanted.has(spec.name));
  };

  return {
    async agent(request: AgentRequest, config: LangGraphRunnableConfig): Promise<string> {
      const emit = (event: RuntimeEvent) => config.writer?.(event);
      const tools = await specsFor(request.tools);
      const offered = new Set(tools.map((t) => t.name));
      const messages: ChatMessage[] = [
        ...(request.systemPrompt ? [{ role: 'system' as const, content: request.systemPrompt }] : []),
        ...request.messages.map(({ role, content }) => ({ role, content })),
      ];
      for (let step = 1; ; step++) {
        const offerTools = tools.length > 0 && step < MAX_AGENT_STEPS;
        let text = '';
        let calls: ToolCall[] = [];
        for await (const event of deps.llm.stream({
          messages,
          ...(request.model && { model: request.model }),
          ...(offerTools && { tools }),
          ...(config.signal && { signal: config.signal }),
        })) {
          if (event.type === 'delta') {
            text += event.text;
            emit({ type: 'token', node: request.node, text: event.text });
          } else if (event.type === 'tool_calls') calls = event.calls;
        }
        if (!offerTools || calls.length === 0) return text;
        messages.push({ role: 'assistant', content: text, toolCalls: calls });
        for (const call of calls) {
          emit({ type: 'tool_call', node: request.node, name: call.name, args: call.arguments });
          const result = offered.has(call.name)
            ? await deps.tools.call(caller, call.name, call.arguments, config.signal ?? new AbortController().signal)
            : { text: `The tool ${call.name} is not available in this node.`, isError: true };
          emit({
            type: 'tool_result',
            node: request.node,
            name: call.name,
            content: result.text,
            is_error: result.isError,
          });
          messages.push({ role: 'tool', content: result.text, toolCallId: call.id, name: call.name });
        }
      }
    },

    async callTool(request: ToolRequest, config: LangGraphRunnableConfig): Promise<string> {
      const emit = (event: RuntimeEvent) => config.writer?.(event);
      emit({ type: 'tool_call', node: request.node, name: request.tool, args: request.args });
      const call = () =>
        deps.tools.call(caller, request.tool, request.args, config.signal ?? new AbortController().signal);
      let result = await call();
      if (result.approvalId !== undefined) {
        // As at a human node: the run waits for a person's answer. On resume LangGraph runs the node again from the
        // top, so the call above asked again (a new request) and `interrupt` now answers the resume value.
        const answer = answerOf(
          deps.interrupt<HumanQuestion, unknown>({
            node: request.node,
            question:
              `Approve ${request.tool} with ${JSON.stringify(request.args).slice(0, 500)}? It changes data on a ` +
              'connected server. Answer "yes" to run it; anything else declines.',
          }),
        );
        if (!/^\s*(yes|y|approve|approved)\s*$/i.test(answer))
          throw new WorkflowToolError(request.node, request.tool, `A person declined the call of ${request.tool}`);
        await deps.tools.approve(caller, result.approvalId);
        result = await call();
      }
      emit({
        type: 'tool_result',
        node: request.node,
        name: request.tool,
        content: result.text,
        is_error: result.isError,
      });
      if (result.isError) throw new WorkflowToolError(request.node, request.tool, result.text);
      return result.text;
    },
  };
}
