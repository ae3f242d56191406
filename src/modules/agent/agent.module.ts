import type { Tracer } from '@opentelemetry/api';
import type { Module } from '../../ports/module.js';
import type { Shutdown } from '../../ports/shutdown.js';
import type { ModelInfo } from './agent.telemetry.js';
import type { Agent } from './agent.port.js';
import { type ChatAdmission, ChatTurnService } from './chat-turn.service.js';

/** What start-up builds: the agent graph and the checkpoints it keeps per conversation. */
export interface BuiltAgent {
  agent: Agent;
  /** Forgets a conversation's checkpoints (thread id = conversation id). */
  deleteThread(threadId: string): Promise<void>;
}

export interface AgentModuleDeps {
  /** Who may take a chat turn, and how many (the MCP policy point). */
  admission: ChatAdmission;
  /**
   * Builds the agent. It runs at start-up, once the database is migrated (the checkpointer keeps its tables
   * there) and every tool the agent may call is wired.
   */
  build: () => Promise<BuiltAgent>;
  /** Records each turn's spans. */
  tracer?: Tracer;
  /** The model the agent calls, for the spans. */
  model?: ModelInfo;
  /** The threads (conversation ids) a user's checkpoints are kept under, for erasure. */
  threadsOf: (userId: string) => Promise<string[]>;
  /** The service's shutdown: turns in flight finish within its drain or stop, saying so, at its deadline. */
  shutdown?: Shutdown;
}

export interface AgentParts {
  /** Admits, runs, streams and cancels chat turns for every chat entry point. */
  chat: ChatTurnService;
  /** The started agent; throws before start-up has built it. */
  agent(): Agent;
  /** Forgets a conversation's checkpoints; throws before start-up has built the agent. */
  deleteThread(threadId: string): Promise<void>;
}

/** The LangGraph agent and the chat-turn service in front of it. */
export function createAgentModule(deps: AgentModuleDeps): Module<AgentParts> {
  let built: BuiltAgent | undefined;
  const started = (): BuiltAgent => {
    if (!built) throw new Error('the agent is not started');
    return built;
  };
  const agent = () => started().agent;
  return {
    name: 'agent',
    service: {
      chat: new ChatTurnService({
        agent,
        admission: deps.admission,
        ...(deps.tracer && { tracer: deps.tracer }),
        ...(deps.model && { model: deps.model }),
        ...(deps.shutdown && { shutdown: deps.shutdown }),
      }),
      agent,
      deleteThread: (threadId) => started().deleteThread(threadId),
    },
    erasure: [
      {
        step: 'checkpoints',
        async run({ user }) {
          const threads = await deps.threadsOf(user.id);
          for (const threadId of threads) await started().deleteThread(threadId);
          return threads.length;
        },
      },
    ],
    async start() {
      built = await deps.build();
    },
  };
}
