import { readFile } from 'node:fs/promises';

/**
 * MCP Apps (SEP-1865, the `io.modelcontextprotocol/ui` extension): tools whose results a host shows in a view the
 * server ships as an HTML resource, and tools that only such a view calls. A client that does not announce the
 * extension sees neither: the views' `_meta`, the view-only tools and the view resources are for hosts that render
 * them.
 */

export const APPS_EXTENSION = 'io.modelcontextprotocol/ui';
/** The MIME type of an MCP App's HTML. */
export const APP_MIME_TYPE = 'text/html;profile=mcp-app';
/** The view of a workflow run: its steps as they go, its question as a form, its output. */
export const RUN_VIEW_URI = 'ui://agent-service/workflow-run.html';
/** The `_meta` key a published workflow's tool names its workflow under, for its view. */
export const WORKFLOW_ID_META_KEY = 'agent-service/workflow_id';

/** How a tool takes part in MCP Apps: the view its results show in, and who may call it (`app`: only a view). */
export interface ToolUi {
  resourceUri?: string;
  visibility?: ('model' | 'app')[];
}

/** A tool only views call: never offered to a model, nor to a client without the extension. */
export const isAppOnly = (ui: ToolUi | undefined): boolean =>
  ui?.visibility !== undefined && !ui.visibility.includes('model');

/**
 * Whether a client's capabilities announce MCP Apps: the extension, with no MIME types named or the app one among
 * them. Capabilities of either era (the 2025 `initialize` ones, a 2026-07-28 request's own).
 */
export function announcesApps(capabilities: unknown): boolean {
  const extensions = (capabilities as { extensions?: unknown } | undefined)?.extensions;
  if (typeof extensions !== 'object' || extensions === null) return false;
  const ui = (extensions as Record<string, unknown>)[APPS_EXTENSION];
  if (typeof ui !== 'object' || ui === null) return false;
  const { mimeTypes } = ui as { mimeTypes?: unknown };
  return !Array.isArray(mimeTypes) || mimeTypes.includes(APP_MIME_TYPE);
}

/** The views this server ships, by URI: their HTML, read when first asked for. */
export interface AppViews {
  html(uri: string): Promise<string | undefined>;
}

/** The resources of the views, as `resources/list` shows them to a host that renders views. */
export const VIEW_RESOURCES = [
  {
    uri: RUN_VIEW_URI,
    name: 'workflow-run-view',
    title: 'Workflow run',
    description: "A workflow run as it goes: its steps, tool calls, streamed text, a human step's question, its output",
    mimeType: APP_MIME_TYPE,
    /** Where a web host of this service (the playground) serves the view's page, under its own origin. */
    page: 'views/workflow-run.html',
  },
] as const;

/** A tool with a view, as a web host of this service lists it for its user. */
export interface ToolView {
  tool: string;
  title: string;
  resource_uri: string;
  /** The workflow a published workflow's tool runs (null for the service's own tools). */
  workflow_id: string | null;
  /** The view's page on the host's listener, relative to the host's root. */
  page: string;
}

/**
 * What a view's resource declares besides its HTML: no origin to connect to or load from (everything it shows comes
 * through the host's proxy of this server), and the host's own border.
 */
export const VIEW_META = { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true } };

/**
 * Views built into files (`npm run build:web`), by URI: each read once, when first asked for. A view whose file is
 * missing (a service built without its web assets) is no resource; asked again, it is looked for again.
 */
export function builtViews(files: Readonly<Record<string, string>>): AppViews {
  const read = new Map<string, Promise<string>>();
  return {
    async html(uri) {
      const file = Object.hasOwn(files, uri) ? files[uri] : undefined;
      if (file === undefined) return undefined;
      let html = read.get(uri);
      if (!html) {
        html = readFile(file, 'utf8');
        read.set(uri, html);
      }
      return html.catch(() => {
        read.delete(uri);
        return undefined;
      });
    },
  };
}
