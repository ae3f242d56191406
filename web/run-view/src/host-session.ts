import type { App } from '@modelcontextprotocol/ext-apps';
import type { Run, WorkflowDefinition } from '../../builder/src/api/builder-api';
import { type RunEvent, toRunEvent } from '../../builder/src/api/run-stream';

/** The `_meta` key under which a published workflow's tool names its workflow (the server's WORKFLOW_ID_META_KEY). */
const WORKFLOW_ID_META_KEY = 'agent-service/workflow_id';
/** How often a run that is still going is read again. */
const POLL_MS = 400;

export type Theme = 'light' | 'dark';

/** Everything the view shows, as one immutable snapshot. */
export interface ViewState {
  /** `connecting` to the host; `starting` until the run is found; `watching` it go; `settled` once it stopped. */
  phase: 'connecting' | 'starting' | 'watching' | 'settled';
  theme: Theme;
  title: string | null;
  workflowId: string | null;
  input: string | null;
  run: Run | null;
  events: RunEvent[];
  graph: WorkflowDefinition | null;
  /** A call the person made from the view is under way (an answer, a stop). */
  busy: 'answer' | 'stop' | null;
  /** What went wrong, in words for the person. */
  error: string | null;
}

type Listener = () => void;

interface WatchResult {
  run: Run | null;
  events: (Record<string, unknown> & { type: string })[];
  next: number;
  graph?: WorkflowDefinition;
}

const isRun = (value: unknown): value is Run =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Run).run_id === 'string' &&
  typeof (value as Run).workflow_id === 'string';

const textOf = (result: { content?: { type: string; text?: string }[] }): string =>
  (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n');

/**
 * The view's side of the host connection: it hears the tool call the view was opened for (its arguments, then its
 * result), watches the run through the view-only `workflow_run_view` tool while it goes, and answers or stops a
 * run that waits through the host's proxy of `workflow_resume` and `workflow_run_cancel`. Every call goes through
 * the host, as the person it acts for.
 */
export class HostSession {
  #state: ViewState = {
    phase: 'connecting',
    theme: 'light',
    title: null,
    workflowId: null,
    input: null,
    run: null,
    events: [],
    graph: null,
    busy: null,
    error: null,
  };
  readonly #listeners = new Set<Listener>();
  #after = 0;
  #polling = false;
  /** The tool call (or the answer) the view waits on has returned: a settled run is then final. */
  #returned = false;

  constructor(private readonly app: App) {
    app.ontoolinput = ({ arguments: args }) => {
      const input = typeof args?.input === 'string' ? args.input : null;
      const workflowId = typeof args?.workflow_id === 'string' ? args.workflow_id : this.#state.workflowId;
      this.#set({ input, workflowId, phase: 'starting' });
      this.#watch();
    };
    app.ontoolresult = (result) => this.#onResult(result);
    app.ontoolcancelled = () => this.#set({ phase: 'settled', error: 'The call was cancelled.' });
    app.onhostcontextchanged = (context) => {
      if (context.theme) this.#theme(context.theme);
    };
  }

  subscribe = (listener: Listener): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  snapshot = (): ViewState => this.#state;

  async start(): Promise<void> {
    try {
      await this.app.connect();
    } catch {
      this.#set({ phase: 'settled', error: 'The view could not reach its host.' });
      return;
    }
    const context = this.app.getHostContext();
    if (context?.theme) this.#theme(context.theme);
    const tool = context?.toolInfo?.tool;
    const fromMeta = tool?._meta?.[WORKFLOW_ID_META_KEY];
    this.#set({
      title: tool?.title ?? tool?.name ?? null,
      ...(typeof fromMeta === 'string' && { workflowId: fromMeta }),
      phase: this.#state.phase === 'connecting' ? 'starting' : this.#state.phase,
    });
  }

  /** Answers the question the run waits on; the run goes on, watched, to its end or its next question. */
  async answer(text: string): Promise<void> {
    const { run } = this.#state;
    if (!run || run.status !== 'waiting' || this.#state.busy) return;
    this.#returned = false;
    this.#set({ busy: 'answer', error: null, run: { ...run, status: 'running', question: null }, phase: 'watching' });
    this.#watch();
    try {
      const result = await this.app.callServerTool({
        name: 'workflow_resume',
        arguments: { workflow_id: run.workflow_id, run_id: run.run_id, answer: text },
      });
      this.#onResult(result);
    } catch {
      this.#set({ error: 'The answer did not reach the service; try again.', run });
    } finally {
      this.#set({ busy: null });
    }
  }

  /** Stops the run that waits: its question stays unanswered. */
  async stop(): Promise<void> {
    const { run } = this.#state;
    if (!run || run.status !== 'waiting' || this.#state.busy) return;
    this.#set({ busy: 'stop', error: null });
    try {
      const result = await this.app.callServerTool({
        name: 'workflow_run_cancel',
        arguments: { workflow_id: run.workflow_id, run_id: run.run_id },
      });
      if (result.isError) this.#set({ error: textOf(result) || 'The run could not be stopped.' });
      else if (isRun(result.structuredContent)) this.#set({ run: result.structuredContent, phase: 'settled' });
    } catch {
      this.#set({ error: 'The stop did not reach the service; try again.' });
    } finally {
      this.#set({ busy: null });
    }
  }

  #onResult(result: { content?: { type: string; text?: string }[]; structuredContent?: unknown; isError?: boolean }) {
    this.#returned = true;
    const run = result.structuredContent;
    if (isRun(run)) {
      this.#set({ run, workflowId: run.workflow_id, phase: 'watching' });
      // What the run showed after the last read, now that it is known by its id.
      this.#watch();
      return;
    }
    this.#set({ phase: 'settled', error: result.isError ? textOf(result) || 'The call failed.' : null });
  }

  /** Reads the run again and again while it goes (one loop at a time). */
  #watch(): void {
    if (this.#polling) return;
    this.#polling = true;
    void this.#loop().finally(() => {
      this.#polling = false;
    });
  }

  async #loop(): Promise<void> {
    for (;;) {
      const { workflowId, run } = this.#state;
      if (!workflowId) return;
      let watched: WatchResult;
      try {
        const result = await this.app.callServerTool({
          name: 'workflow_run_view',
          arguments: { workflow_id: workflowId, after: this.#after, ...(run && { run_id: run.run_id }) },
        });
        if (result.isError) {
          this.#set({ error: textOf(result) || 'The run could not be read.' });
          return;
        }
        watched = result.structuredContent as WatchResult;
      } catch {
        this.#set({ error: 'The run could not be read from the service.' });
        return;
      }
      this.#take(watched);
      const now = this.#state.run;
      const going = !now || now.status === 'running';
      // Everything read, and the run stopped: once the call returned, or at its question (the call returns then).
      if (!going && watched.events.length === 0 && (this.#returned || now.status === 'waiting')) {
        this.#set({ phase: 'settled' });
        return;
      }
      if (!going && watched.events.length > 0) continue;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  #take(watched: WatchResult): void {
    const events = watched.events.flatMap((e) => toRunEvent(e.type, e) ?? []);
    this.#after = Math.max(this.#after, watched.next);
    const known = this.#state.run;
    // The call's own result is newer than a read taken before it came.
    const run =
      watched.run && !(this.#returned && known && known.run_id === watched.run.run_id && known.status !== 'running')
        ? watched.run
        : known;
    this.#set({
      run,
      events: events.length > 0 ? [...this.#state.events, ...events] : this.#state.events,
      ...(watched.graph && { graph: watched.graph }),
      ...(run && { phase: 'watching' as const }),
    });
  }

  #theme(theme: Theme): void {
    document.documentElement.dataset.theme = theme;
    document.documentElement.style.colorScheme = theme;
    this.#set({ theme });
  }

  #set(changes: Partial<ViewState>): void {
    this.#state = { ...this.#state, ...changes };
    for (const listener of this.#listeners) listener();
  }
}
