import type { AuthzService } from '../adapters/authz/port.js';
import type { CounterStore } from '../adapters/counters/port.js';
import { CommonErrorCode, ForbiddenError, RateLimitError } from '../errors.js';
import { type Caller, CallerErrorCode } from '../ports/caller.js';
import { subjectOf } from '../ports/subjects.js';

export interface McpLimits {
  requestsPerMinute: number;
  toolCallsPerMinute: number;
  maxConcurrentStreams: number;
}

/** What the rate-limit headers report after a request was admitted. */
export interface RateState {
  limit: number;
  remaining: number;
  /** Epoch seconds at which the window resets. */
  reset: number;
}

const WINDOW_MS = 60_000;

export const toolObject = (name: string): string => `tool:${name}`;
const requestKey = (subject: string): string => `mcp:req:${subject}`;
const toolCallKey = (subject: string): string => `mcp:tool:${subject}`;

/** `X-RateLimit-*` headers for a window. */
export function rateHeaders(state: RateState): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(state.limit),
    'X-RateLimit-Remaining': String(state.remaining),
    'X-RateLimit-Reset': String(state.reset),
  };
}

/**
 * The scope a caller's token lacks to call a tool: a token narrowed to `mcp:read` may call read-only tools only.
 * Undefined when nothing is missing (a token not narrowed at all included).
 */
export function missingScope(caller: Caller, options: { readOnly?: boolean }): 'mcp:tools' | undefined {
  return caller.scopes && !caller.scopes.includes('mcp:tools') && !options.readOnly ? 'mcp:tools' : undefined;
}

/** How long a caller's list of visible tools is reused (every call is checked again, through the decision cache). */
const VISIBILITY_TTL_MS = 1_000;
const VISIBILITY_CACHE_LIMIT = 10_000;

/**
 * The one policy point of every MCP wire: who may see and call which tool (relationship tuples on `tool:<name>`),
 * how many requests and tool calls a caller may make per minute, and how many streams it may hold open. Counters
 * live in the counter store (shared through Redis when configured); open streams are counted per instance.
 */
export class McpPolicy {
  readonly #streams = new Map<string, number>();
  readonly #visible = new Map<string, { at: number; tools: string[] }>();

  constructor(
    private readonly deps: { authz: AuthzService; counters: CounterStore; limits: McpLimits; now?: () => Date },
  ) {}

  /** Counts one MCP request against the caller's per-minute budget; 429 beyond it. */
  admitRequest(caller: Caller): Promise<RateState> {
    return this.#admit(requestKey(subjectOf(caller)), this.deps.limits.requestsPerMinute, 'Too many MCP requests');
  }

  /**
   * Forgets a subject's rate-limit windows (account erasure: their keys name the subject). Returns how many were
   * counting.
   */
  async forget(subject: string): Promise<number> {
    let forgotten = 0;
    for (const key of [requestKey(subject), toolCallKey(subject)]) {
      if ((await this.deps.counters.peek(key)).count > 0) forgotten += 1;
      await this.deps.counters.reset(key);
    }
    return forgotten;
  }

  /**
   * Whether the caller may call the tool (403 `permission_denied` if not), then counts the call (429 beyond). A
   * caller whose token is narrowed to `mcp:read` may call read-only tools only.
   */
  async admitToolCall(caller: Caller, tool: string, options: { readOnly?: boolean } = {}): Promise<void> {
    if (missingScope(caller, options)) {
      throw new ForbiddenError(`Insufficient scope: calling ${tool} needs the mcp:tools scope`, {
        code: CallerErrorCode.AccessDenied,
      });
    }
    if (!(await this.deps.authz.check(subjectOf(caller), 'executor', toolObject(tool)))) {
      throw new ForbiddenError(`Permission denied: you may not call the tool ${tool}`, {
        code: CallerErrorCode.AccessDenied,
      });
    }
    await this.#admit(toolCallKey(subjectOf(caller)), this.deps.limits.toolCallsPerMinute, 'Too many tool calls');
  }

  /**
   * The tools among `names` the caller may see (`viewer`, which `executor` implies). Clients list tools often and
   * each check walks the tuples, so a caller's answer is reused for a second; a revocation shows in listings after
   * at most that long, and never lets a call through (calls are checked by `admitToolCall`).
   */
  async visibleTools(caller: Caller, names: string[]): Promise<string[]> {
    const subject = subjectOf(caller);
    const key = `${subject}|${names.join(',')}`;
    const now = Date.now();
    const cached = this.#visible.get(key);
    if (cached && now - cached.at < VISIBILITY_TTL_MS) return cached.tools;
    const allowed = await Promise.all(names.map((name) => this.deps.authz.check(subject, 'viewer', toolObject(name))));
    const tools = names.filter((_, i) => allowed[i]);
    if (this.#visible.size >= VISIBILITY_CACHE_LIMIT) this.#visible.clear();
    this.#visible.set(key, { at: now, tools });
    return tools;
  }

  /** Reserves one of the caller's concurrent streams; call the returned function when the stream ends. */
  openStream(caller: Caller): () => void {
    const key = subjectOf(caller);
    const open = this.#streams.get(key) ?? 0;
    if (open >= this.deps.limits.maxConcurrentStreams) {
      throw new RateLimitError(`At most ${this.deps.limits.maxConcurrentStreams} concurrent streams`, 1, {
        code: CommonErrorCode.RateLimit,
      });
    }
    this.#streams.set(key, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.#streams.get(key) ?? 1) - 1;
      if (now <= 0) this.#streams.delete(key);
      else this.#streams.set(key, now);
    };
  }

  async #admit(key: string, limit: number, message: string): Promise<RateState> {
    const window = await this.deps.counters.hit(key, WINDOW_MS);
    const state: RateState = {
      limit,
      remaining: Math.max(0, limit - window.count),
      reset: Math.ceil(window.resetAt / 1000),
    };
    if (window.count > limit) {
      const now = (this.deps.now ?? (() => new Date()))().getTime();
      const retryAfter = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
      throw new RateLimitError(`${message}: at most ${limit} per minute`, retryAfter, {
        code: CommonErrorCode.RateLimit,
        headers: rateHeaders(state),
      });
    }
    return state;
  }
}
