import type { Tool } from '@modelcontextprotocol/client';
import { Component, lazy, type ReactNode, Suspense, useContext, useEffect, useMemo, useSyncExternalStore } from 'react';
import type { ToolView } from '../../api/playground-api';
import type { ToolPart } from '../chat/chat-model';
import { ToolViewsContext } from './tool-views';

/** The `_meta` key under which a published workflow's tool names its workflow (the view reads it). */
const WORKFLOW_ID_META_KEY = 'agent-service/workflow_id';

// The host's side of MCP Apps is loaded only once a call with a view is on the screen.
const McpAppFrame = lazy(() => import('./mcp-app-frame').then((m) => ({ default: m.McpAppFrame })));

/** A failure inside the view's part of the page stays there: the chat goes on. */
class ViewBoundary extends Component<{ children: ReactNode }, { failed: boolean }> {
  override state = { failed: false };

  static getDerivedStateFromError() {
    return { failed: true };
  }

  override render() {
    if (this.state.failed) {
      return (
        <p className="app-view__note" role="status">
          The view of this call could not be shown; the call itself is above.
        </p>
      );
    }
    return this.props.children;
  }
}

/** A call's result as the view hears it: the stream gives the text of its content. */
function resultText(result: unknown): string {
  if (typeof result === 'string') return result;
  if (Array.isArray(result)) {
    return result
      .map((block: unknown) =>
        typeof block === 'object' && block !== null && typeof (block as { text?: unknown }).text === 'string'
          ? (block as { text: string }).text
          : JSON.stringify(block),
      )
      .join('\n');
  }
  return result === undefined || result === null ? '' : JSON.stringify(result);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The tool as its view reads it from the host context: its name, its title, its view and its workflow. */
function toolOf(view: ToolView): Tool {
  return {
    name: view.tool,
    title: view.title,
    inputSchema: { type: 'object' },
    _meta: {
      ui: { resourceUri: view.resource_uri },
      ...(view.workflow_id !== null && { [WORKFLOW_ID_META_KEY]: view.workflow_id }),
    },
  };
}

/** The view's page, resolved against this page's address (the playground may sit behind a path prefix). */
function pageUrl(page: string): string | undefined {
  try {
    const url = new URL(page, document.baseURI);
    return url.origin === window.location.origin ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Under a tool call whose tool has a view (a published workflow's), the view of that call, live: what the people who
 * call the tool from an MCP host will see. Nothing for any other call, or one that waits for the person first.
 */
export function ToolAppView({ call, interrupted }: { call: ToolPart; interrupted: boolean }) {
  const views = useContext(ToolViewsContext);
  useEffect(() => views.want(call.name), [views, call.name]);
  const view = useSyncExternalStore(views.subscribe, () => views.viewOf(call.name));
  const tool = useMemo(() => (view ? toolOf(view) : undefined), [view]);
  const src = useMemo(() => (view ? pageUrl(view.page) : undefined), [view]);
  const input = useMemo(() => (isRecord(call.args) ? call.args : {}), [call.args]);
  const result = useMemo(
    () => (call.done ? { text: resultText(call.result), isError: call.isError } : undefined),
    [call.done, call.result, call.isError],
  );

  if (!view || !tool || !src || call.needs) return null;
  return (
    <ViewBoundary>
      <Suspense
        fallback={
          <p className="app-view__note" role="status">
            <span className="spinner" aria-hidden="true" /> Opening the view…
          </p>
        }
      >
        <McpAppFrame
          key={src}
          src={src}
          title={`Workflow run: ${view.title}`}
          tool={tool}
          hostVersion={views.hostVersion}
          input={input}
          result={result}
          cancelled={interrupted && !call.done}
          callTool={views.callTool}
        />
      </Suspense>
    </ViewBoundary>
  );
}
