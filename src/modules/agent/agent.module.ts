import type { Tracer } from '@opentelemetry/api';
import type { Logger } from '../../logger.js';
import type { Module } from '../../ports/module.js';
import type { Shutdown } from '../../ports/shutdown.js';
import { subjectOf } from '../../ports/subjects.js';
import type { ConversationsService } from '../conversations/index.js';
import type { ModelInfo } from './agent.telemetry.js';
import type { Agent } from './agent.port.js';
import { type ChatAdmission, ChatTurnService, type KeepStoppedTurn } from './chat-turn.service.js';

/** What the module builds on first use: the agent graph and the checkpoints it keeps per conversation. */
export interface BuiltAgent {
  agent: Agent;
  /** Forgets a conversation's checkpoints (thread id = conversation id). */
  deleteThread(threadId: string): Promise<void>;
}

export interface AgentModuleDeps {
  /** Who may take a chat turn, and how many (the MCP policy point). */
  admission: ChatAdmission;
  /**
   * Builds the agent. It runs once the module is started (the database is migrated, where the checkpointer keeps
   * its tables, and every tool the agent may call is wired), on the first turn or erasure of checkpoints: what it
   * loads (LangGraph and LangChain, about 25 MB of memory) stays out of a service nobody chats with. A build that
   * fails is tried again by the next use.
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
  /** Where a stopped turn is kept, for the entry points that keep it (the playground); none without. */
  conversations?: Pick<ConversationsService, 'access' | 'append'>;
  logger?: Logger;
}

export interface AgentParts {
  /** Admits, runs, streams and cancels chat turns for every chat entry point. */
  chat: ChatTurnService;
  /** The started agent; throws before the module is started. */
  agent(): Agent;
  /** Forgets a conversation's checkpoints; fails before the module is started. */
  deleteThread(threadId: string): Promise<void>;
}

/** The LangGraph agent and the chat-turn service in front of it. */
export function createAgentModule(deps: AgentModuleDeps): Module<AgentParts> {
  let started = false;
  let building: Promise<BuiltAgent> | undefined;
  const built = (): Promise<BuiltAgent> => {
    if (!started) return Promise.reject(new Error('the agent is not started'));
    building ??= deps.build().catch((error: unknown) => {
      building = undefined;
      throw error;
    });
    return building;
  };
  const lazyAgent: Agent = {
    async *run(turn) {
      yield* (await built()).agent.run(turn);
    },
  };
  const agent = () => {
    if (!started) throw new Error('the agent is not started');
    return lazyAgent;
  };
  const { conversations } = deps;
  const keepStopped: KeepStoppedTurn | undefined =
    conversations &&
    (async (caller, conversationId, messages) => {
      try {
        const conversation = await conversations.access(subjectOf(caller), conversationId, 'owner');
        await conversations.append(conversation, messages);
        // LangGraph's checkpoint holds at most the turn's first steps, and the recorded conversation is the truth:
        // without a checkpoint, the next turn starts from the record, stopped answer included.
        await (await built()).deleteThread(conversationId);
      } catch (err) {
        deps.logger?.error({ err, conversationId }, 'stopped turn not kept in its conversation');
      }
    });
  return {
    name: 'agent',
    service: {
      chat: new ChatTurnService({
        agent,
        admission: deps.admission,
        ...(deps.tracer && { tracer: deps.tracer }),
        ...(deps.model && { model: deps.model }),
        ...(deps.shutdown && { shutdown: deps.shutdown }),
        ...(keepStopped && { keepStopped }),
      }),
      agent,
      deleteThread: async (threadId) => (await built()).deleteThread(threadId),
    },
    erasure: [
      {
        step: 'checkpoints',
        async run({ user }) {
          const threads = await deps.threadsOf(user.id);
          for (const threadId of threads) await (await built()).deleteThread(threadId);
          return threads.length;
        },
      },
    ],
    start() {
      started = true;
      return Promise.resolve();
    },
  };
}
