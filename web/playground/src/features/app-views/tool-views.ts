import type { CallToolResult } from '@modelcontextprotocol/client';
import { createContext } from 'react';
import { ApiError } from '../../../../shared/api/api-error';
import type { PlaygroundApi, ToolView } from '../../api/playground-api';

type Listener = () => void;

/**
 * The tools of the signed-in person that show their calls in a view, read once and kept for the rest of the
 * sign-in. A tool name the list does not know sends for it once more (a workflow published since, in the builder
 * beside the playground), at most once per name.
 */
export class ToolViews {
  readonly #api: Pick<PlaygroundApi, 'views' | 'callViewTool'>;
  readonly #listeners = new Set<Listener>();
  #views: ReadonlyMap<string, ToolView> = new Map();
  #loading: Promise<void> | null = null;
  #loaded = false;
  /** The service has no views to tell of (one from before them): nothing to ask again. */
  #none = false;
  /** The names that were unknown once the list was read, and have had their second reading. */
  readonly #asked = new Set<string>();

  /** What the playground says of itself to the views it hosts. */
  readonly hostVersion: string;

  constructor(api: Pick<PlaygroundApi, 'views' | 'callViewTool'>, hostVersion: string) {
    this.#api = api;
    this.hostVersion = hostVersion;
  }

  subscribe = (listener: Listener): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  /** The view of a tool, if the list read so far has one. */
  viewOf = (tool: string): ToolView | undefined => this.#views.get(tool);

  /** A tool call is on the screen: makes sure the list has been read, and read again for a name it lacks. */
  want(tool: string): void {
    void this.#want(tool);
  }

  /**
   * A view's tool call, made through the playground as the signed-in person. A refusal (not allowed, too many
   * calls) is the tool's failed result, as MCP's own wires answer it; a tool no view may call, or a failure to
   * reach the service, fails the request itself.
   */
  callTool = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    try {
      return await this.#api.callViewTool(name, args);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 403 || error.status === 429)) {
        return { content: [{ type: 'text', text: error.message }], isError: true };
      }
      throw error;
    }
  };

  async #want(tool: string): Promise<void> {
    await this.#read();
    if (!this.#loaded || this.#none || this.#views.has(tool) || this.#asked.has(tool)) return;
    this.#asked.add(tool);
    await this.#read(true);
  }

  /** Reads the list unless it has been read (or, `again`, reads it anew); one reading at a time. */
  #read(again = false): Promise<void> {
    if (this.#none) return Promise.resolve();
    if (this.#loading) return this.#loading.then(() => (again ? this.#read(true) : undefined));
    if (this.#loaded && !again) return Promise.resolve();
    this.#loading = this.#api.views().then(
      ({ views }) => {
        this.#views = new Map(views.map((view) => [view.tool, view]));
        this.#loaded = true;
        for (const listener of this.#listeners) listener();
      },
      (error: unknown) => {
        // Without the list the chat shows calls as before; the next call on the screen asks again, unless the
        // service does not know the route at all.
        if (error instanceof ApiError && error.status === 404) {
          this.#none = true;
          this.#loaded = true;
        }
      },
    );
    const loading = this.#loading;
    void loading.finally(() => {
      if (this.#loading === loading) this.#loading = null;
    });
    return loading;
  }
}

/** No views: what a chat outside the signed-in workspace sees. */
export const NO_TOOL_VIEWS = new ToolViews(
  {
    views: () => Promise.resolve({ views: [] }),
    callViewTool: () => Promise.reject(new Error('No view may call tools here.')),
  },
  '0',
);

export const ToolViewsContext = createContext<ToolViews>(NO_TOOL_VIEWS);
