import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { useCallback, useEffect, useId, useMemo, useReducer, useRef, useState, type CSSProperties } from 'react';
import type { ApiClient } from '../../../../shared/api/api-client';
import { describeError } from '../../../../shared/api/api-error';
import { ConnectionsPanel } from '../../../../shared/connections/connections-panel';
import { ConfirmDialog } from '../../../../shared/ui/confirm-dialog';
import { PendingState } from '../../../../shared/ui/pending-state';
import { useAsync } from '../../../../shared/ui/use-async';
import {
  VersionConflictError,
  WorkflowInvalidError,
  type BuilderApi,
  type BuilderConfig,
  type Issue,
  type NodeType,
  type Workflow,
  type WorkflowDefinition,
} from '../../api/builder-api';
import {
  BackIcon,
  CodeIcon,
  DownloadIcon,
  HistoryIcon,
  PlayIcon,
  RedoIcon,
  SaveIcon,
  SlidersIcon,
  UndoIcon,
} from '../../ui/icons';
import { Modal } from '../../ui/modal';
import { PanelResizer, usePanelWidth } from '../../ui/panel-resizer';
import { Tabs, tabIds } from '../../ui/tabs';
import { CodePanel } from '../code/code-panel';
import { HistoryPanel } from '../history/history-panel';
import { RunPanel } from '../run/run-panel';
import { currentNode, travelledSteps, visitedNodes } from '../run/run-model';
import { useRun } from '../run/use-run';
import { exportWorkflow } from '../workflows/workflow-file';
import { Canvas } from './canvas';
import { issuesByElement, type Decorations } from './decorations';
import {
  addNode,
  blankDoc,
  editorReducer,
  fromDefinition,
  newNodeId,
  selectOnly,
  toDefinition,
  type Doc,
} from './editor-state';
import { kindOf } from './node-catalog';
import { Palette } from './palette';
import { ProblemsPanel, validationSummary } from './problems-panel';
import { PropertiesPanel, fieldOf, nodeName } from './properties-panel';
import { useValidation } from './use-validation';

export interface EditorProps {
  client: ApiClient;
  api: BuilderApi;
  config: BuilderConfig;
  /** The workflow to open; null for a new one. */
  workflowId: string | null;
  /** Administrators may share connections and run allow-listed commands. */
  isAdmin: boolean;
  /** The builder's connections page, where an upstream's sign-in comes back to. */
  connectionsUrl: string;
  /** A new workflow's starting point (an import the service would not save as it was). */
  draft?: { definition: WorkflowDefinition; notice: string } | null;
  /** The first save of a new workflow gave it an id. */
  onCreated: (id: string) => void;
  onLeave: () => void;
}

/** The editor for a saved workflow (loaded first) or a new one. */
export function Editor(props: EditorProps) {
  const { api } = props;
  // Once open, the editor owns the workflow: a save that gives a new workflow its id must not load it again.
  const [openedId] = useState(props.workflowId);
  const loaded = useAsync(openedId ? `workflow:${openedId}` : null, (signal) => api.getWorkflow(openedId!, signal));
  const [opened, setOpened] = useState<Workflow | null | undefined>(openedId ? undefined : null);
  if (opened === undefined && loaded.data) setOpened(loaded.data);

  if (opened === undefined) {
    return (
      <main className="editor editor--loading">
        <PendingState error={loaded.error} what="the workflow" onRetry={loaded.reload} />
      </main>
    );
  }
  return (
    <ReactFlowProvider>
      <EditorScreen {...props} initial={opened} />
    </ReactFlowProvider>
  );
}

type SideTab = 'properties' | 'history' | 'code' | 'run';

/** How long a notice stays above the canvas. */
const INFO_BANNER_MS = 8000;

/**
 * The side panel's width bounds (the default is the stylesheet's `--side-width`): at its narrowest its tabs still
 * show in full; at its widest the palette and at least `CANVAS_MIN_PX` of canvas stay beside it.
 */
const SIDE_MIN_PX = 320;
const SIDE_MAX_PX = 760;
const PALETTE_PX = 212;
const CANVAS_MIN_PX = 360;
const SIDE_WIDTH_KEY = 'agent-service:builder:side-width';

type Banner =
  | { kind: 'conflict'; current: number | undefined; message: string }
  /** `note` is an `info` that stays until dismissed. */
  | { kind: 'error' | 'info' | 'note'; message: string }
  /** A save refused for the problems validation found: it counts them as they are fixed, and goes with the last. */
  | { kind: 'invalid' }
  /** A save refused for want of a name: it goes once the workflow has one. */
  | { kind: 'unnamed' };

interface Saved {
  id: string | null;
  version: number | null;
  /** The definition as last saved, to tell whether there are unsaved changes. */
  key: string | null;
  published: boolean;
  toolName: string | null;
}

const keyOf = (doc: Doc) => JSON.stringify(toDefinition(doc));

function savedOf(workflow: Workflow, doc: Doc): Saved {
  return {
    id: workflow.workflow_id,
    version: workflow.version,
    key: keyOf(doc),
    published: workflow.published,
    toolName: workflow.tool_name,
  };
}

function describeIssueTarget(issue: Issue, doc: Doc): string | undefined {
  if (issue.edge_id) {
    const edge = doc.edges.find((e) => e.id === issue.edge_id);
    if (!edge) return `edge ${issue.edge_id}`;
    const name = (id: string) => {
      const n = doc.nodes.find((x) => x.id === id);
      return n ? nodeName(n) : id;
    };
    return `edge ${name(edge.source)} → ${name(edge.target)}`;
  }
  if (issue.node_id) {
    const node = doc.nodes.find((n) => n.id === issue.node_id);
    const field = issue.field ? ` · ${fieldOf(issue)}` : '';
    if (!node) return `node ${issue.node_id}`;
    const title = kindOf(node.type).title;
    const label = nodeName(node);
    return `${title} node${label !== title ? ` “${label}”` : ''}${field}`;
  }
  return issue.field ? `workflow · ${fieldOf(issue)}` : undefined;
}

/** The set kept from an earlier render while the new one holds the same items (in the same order). */
function useSameWhileEqual(set: Set<string>): Set<string> {
  const key = [...set].join('\n');
  const [kept, setKept] = useState({ key, set });
  if (kept.key === key) return kept.set;
  setKept({ key, set });
  return set;
}

function EditorScreen({
  client,
  api,
  config,
  draft,
  onCreated,
  onLeave,
  initial,
  isAdmin,
  connectionsUrl,
}: EditorProps & { initial: Workflow | null }) {
  const flow = useReactFlow();
  const [state, dispatch] = useReducer(editorReducer, undefined, () => {
    const doc = initial ? fromDefinition(initial) : draft ? fromDefinition(draft.definition) : blankDoc();
    return { doc, past: [], future: [], lastEdit: null };
  });
  const { doc } = state;
  const [saved, setSaved] = useState<Saved>(() =>
    initial
      ? savedOf(initial, fromDefinition(initial))
      : { id: null, version: null, key: null, published: false, toolName: null },
  );
  const [tab, setTab] = useState<SideTab>('properties');
  const [saving, setSaving] = useState(false);
  const [banner, setBanner] = useState<Banner | null>(draft ? { kind: 'note', message: draft.notice } : null);
  const [announcement, setAnnouncement] = useState('');
  const [leaving, setLeaving] = useState(false);
  /** The connections, over the editor so that its work stays; the tools load again when it closes. */
  const [managingConnections, setManagingConnections] = useState(false);
  const [publishing, setPublishing] = useState(false);
  const wrapperRef = useRef<HTMLDivElement>(null);
  const nameRef = useRef<HTMLInputElement>(null);
  const sideRef = useRef<HTMLElement>(null);
  const sideId = useId();
  const sideWidth = usePanelWidth(SIDE_WIDTH_KEY, {
    min: SIDE_MIN_PX,
    max: SIDE_MAX_PX,
    others: PALETTE_PX + CANVAS_MIN_PX,
  });

  const definition = useMemo(() => toDefinition(doc), [doc]);
  const currentKey = useMemo(() => JSON.stringify(definition), [definition]);
  const dirty = saved.key !== currentKey;
  const validation = useValidation(api, definition);
  const showReport = validation.show;
  const tools = useAsync('tools', (signal) => api.tools(signal));
  const run = useRun(client, api, saved.id);

  // The same words twice in a row would not be read again: the second time they get a trailing space.
  const announce = useCallback(
    (text: string) => setAnnouncement((last) => (last === text ? `${text}\u00a0` : text)),
    [],
  );

  const selectElement = useCallback(
    (id: string | null) => {
      dispatch({ type: 'transient', update: (d) => selectOnly(d, id) });
      if (id === null) return;
      const node = flow.getNode(id);
      if (node) {
        void flow.fitView({ nodes: [{ id }], duration: 250, maxZoom: Math.max(flow.getZoom(), 0.9), padding: 0.6 });
      }
      setTab('properties');
    },
    [flow],
  );

  const issues = useMemo(
    () => (validation.report ? [...validation.report.errors, ...validation.report.warnings] : []),
    [validation.report],
  );
  const { nodeIssues, edgeIssues } = useMemo(() => issuesByElement(issues), [issues]);
  const routers = useMemo(() => new Set(doc.nodes.filter((n) => n.type === 'router').map((n) => n.id)), [doc.nodes]);
  const running = currentNode(run.view);
  // The same sets while they hold the same nodes, so that streamed tokens do not redraw the whole canvas.
  const visited = useSameWhileEqual(visitedNodes(run.view));
  const travelled = useSameWhileEqual(travelledSteps(run.view));
  const decorations = useMemo<Decorations>(
    () => ({ nodeIssues, edgeIssues, routers, running, visited, travelled, select: selectElement }),
    [nodeIssues, edgeIssues, routers, running, visited, travelled, selectElement],
  );

  const placeNode = useCallback(
    (type: NodeType) => {
      const rect = wrapperRef.current?.getBoundingClientRect();
      const centre = rect
        ? flow.screenToFlowPosition({ x: rect.left + rect.width / 2, y: rect.top + rect.height / 2 })
        : { x: 0, y: 0 };
      let position = { x: Math.round(centre.x / 10) * 10 - 100, y: Math.round(centre.y / 10) * 10 - 40 };
      for (let i = 0; i < 12; i++) {
        const clash = doc.nodes.some(
          (n) => Math.abs(n.position.x - position.x) < 80 && Math.abs(n.position.y - position.y) < 70,
        );
        if (!clash) break;
        position = { x: position.x + 30, y: position.y + 100 };
      }
      const id = newNodeId(doc, type);
      dispatch({ type: 'edit', update: (d) => addNode(d, type, position, id).doc, at: Date.now() });
      setTab('properties');
      announce(`${kindOf(type).title} node ${id} added and selected.`);
    },
    [announce, doc, flow],
  );

  const onDropped = useCallback(
    (id: string, type: NodeType) => {
      setTab('properties');
      announce(`${kindOf(type).title} node ${id} added and selected.`);
    },
    [announce],
  );

  const undo = useCallback(() => {
    dispatch({ type: 'undo' });
    announce('Undone.');
  }, [announce]);
  const redo = useCallback(() => {
    dispatch({ type: 'redo' });
    announce('Redone.');
  }, [announce]);

  const save = useCallback(
    async (force = false) => {
      if (saving) return;
      if (!definition.name) {
        setBanner({ kind: 'unnamed' });
        nameRef.current?.focus();
        return;
      }
      setSaving(true);
      setBanner(null);
      const sentKey = currentKey;
      try {
        const workflow = saved.id
          ? await api.updateWorkflow(saved.id, definition, force ? undefined : (saved.version ?? undefined))
          : await api.createWorkflow(definition);
        setSaved({
          id: workflow.workflow_id,
          version: workflow.version,
          key: sentKey,
          published: workflow.published,
          toolName: workflow.tool_name,
        });
        announce(`Saved as version ${workflow.version}.`);
        if (!saved.id) onCreated(workflow.workflow_id);
      } catch (failure) {
        if (failure instanceof VersionConflictError) {
          setBanner({ kind: 'conflict', current: failure.currentVersion, message: failure.message });
        } else if (failure instanceof WorkflowInvalidError) {
          showReport(failure.report);
          setBanner({ kind: 'invalid' });
        } else {
          setBanner({ kind: 'error', message: `Not saved: ${describeError(failure)}` });
        }
      } finally {
        setSaving(false);
      }
    },
    [announce, api, currentKey, definition, onCreated, saved.id, saved.version, saving, showReport],
  );

  const reloadLatest = useCallback(async () => {
    if (!saved.id) return;
    try {
      const workflow = await api.getWorkflow(saved.id);
      const next = fromDefinition(workflow);
      dispatch({ type: 'load', doc: next });
      setSaved(savedOf(workflow, next));
      setBanner({ kind: 'info', message: `Loaded version ${workflow.version}. Your changes were dropped.` });
    } catch (failure) {
      setBanner({ kind: 'error', message: describeError(failure) });
    }
  }, [api, saved.id]);

  const onRestored = useCallback(
    (workflow: Workflow) => {
      const next = fromDefinition(workflow);
      dispatch({ type: 'load', doc: next });
      setSaved(savedOf(workflow, next));
      setBanner({ kind: 'info', message: `Restored: the workflow is now version ${workflow.version}.` });
      announce(`Restored as version ${workflow.version}.`);
    },
    [announce],
  );

  async function togglePublish() {
    if (!saved.id) return;
    setPublishing(true);
    try {
      if (saved.published) {
        await api.unpublish(saved.id);
        setSaved((s) => ({ ...s, published: false }));
        announce('No longer published.');
      } else {
        const result = await api.publish(saved.id);
        setSaved((s) => ({ ...s, published: true, toolName: result.tool_name }));
        announce(`Published as the MCP tool ${result.tool_name}.`);
      }
    } catch (failure) {
      setBanner({ kind: 'error', message: describeError(failure) });
    } finally {
      setPublishing(false);
    }
  }

  // A notice (saved, restored, imported) goes after a while; errors and conflicts stay until dealt with.
  useEffect(() => {
    if (banner?.kind !== 'info') return undefined;
    const timer = window.setTimeout(() => setBanner(null), INFO_BANNER_MS);
    return () => window.clearTimeout(timer);
  }, [banner]);

  // Undo, redo and save from the keyboard, anywhere in the editor except fields that keep their own undo.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (!(event.ctrlKey || event.metaKey) || event.altKey) return;
      if (document.querySelector('dialog[open]')) return;
      const target = event.target instanceof Element ? event.target : null;
      const key = event.key.toLowerCase();
      if (key === 's') {
        event.preventDefault();
        void save();
        return;
      }
      if (target?.closest('[data-native-undo]')) return;
      if (key === 'z' && !event.shiftKey) {
        event.preventDefault();
        undo();
      } else if ((key === 'z' && event.shiftKey) || key === 'y') {
        event.preventDefault();
        redo();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [redo, save, undo]);

  // The browser's own warning before a reload or a closed tab loses unsaved work.
  useEffect(() => {
    if (!dirty) return undefined;
    const onBeforeUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', onBeforeUnload);
    return () => window.removeEventListener('beforeunload', onBeforeUnload);
  }, [dirty]);

  useEffect(() => {
    document.title = `${dirty ? '• ' : ''}${doc.name || 'Untitled'} · Workflow Builder`;
  }, [dirty, doc.name]);

  const describeNode = useCallback(
    (id: string) => {
      const node = doc.nodes.find((n) => n.id === id);
      return node ? { name: nodeName(node), type: node.type } : undefined;
    },
    [doc.nodes],
  );

  const errorCount = validation.report?.errors.length ?? 0;
  const warningCount = validation.report?.warnings.length ?? 0;
  // The banners about a refused save follow what refused it: once it is fixed, they have nothing left to say.
  const fixed =
    banner?.kind === 'invalid'
      ? validation.report !== null && !validation.checking && validation.error === null && errorCount === 0
      : banner?.kind === 'unnamed' && definition.name !== '';
  if (fixed) setBanner(null);
  const runActive = run.view.status === 'running' || run.view.status === 'waiting' || run.view.status === 'starting';
  const sideTabs = [
    {
      id: 'properties',
      label: (
        <>
          <SlidersIcon /> Properties
        </>
      ),
      name: 'Properties',
    },
    {
      id: 'history',
      label: (
        <>
          <HistoryIcon /> History
        </>
      ),
      name: 'History',
    },
    {
      id: 'code',
      label: (
        <>
          <CodeIcon /> Code
        </>
      ),
      name: 'Code',
    },
    {
      id: 'run',
      label: (
        <>
          <PlayIcon /> Run{runActive ? <span className="tabs__dot" aria-hidden="true" /> : null}
        </>
      ),
      name: runActive ? 'Run (in progress)' : 'Run',
    },
  ] as const;
  const ids = tabIds(sideId, tab);

  return (
    <main className="editor" aria-label="Workflow editor">
      <div className="editor-bar">
        <button type="button" className="button button--ghost" onClick={() => (dirty ? setLeaving(true) : onLeave())}>
          <BackIcon />
          Workflows
        </button>
        <span className="editor-bar__divider" aria-hidden="true" />
        <input
          ref={nameRef}
          className="editor-bar__name"
          aria-label="Workflow name"
          value={doc.name}
          maxLength={200}
          placeholder="Name this workflow"
          onChange={(event) => {
            const name = event.target.value;
            dispatch({ type: 'edit', update: (d) => ({ ...d, name }), coalesce: 'workflow:name', at: Date.now() });
          }}
        />
        <span className="save-state" data-state={saved.id === null ? 'new' : dirty ? 'dirty' : 'saved'}>
          {saved.id === null ? 'Not saved yet' : dirty ? 'Unsaved changes' : `Saved · v${saved.version ?? ''}`}
        </span>
        {saved.published ? (
          <span className="badge badge--success" title={`Callable as the MCP tool ${saved.toolName ?? ''}`}>
            Published
          </span>
        ) : null}
        <span className="editor-bar__spacer" />
        <div className="editor-bar__group" aria-label="History of edits" role="group">
          <button
            type="button"
            className="icon-button"
            aria-label="Undo"
            title="Undo (Ctrl+Z)"
            aria-keyshortcuts="Control+Z"
            disabled={state.past.length === 0}
            onClick={undo}
          >
            <UndoIcon />
          </button>
          <button
            type="button"
            className="icon-button"
            aria-label="Redo"
            title="Redo (Ctrl+Shift+Z)"
            aria-keyshortcuts="Control+Shift+Z Control+Y"
            disabled={state.future.length === 0}
            onClick={redo}
          >
            <RedoIcon />
          </button>
        </div>
        <span
          className="validity"
          data-severity={errorCount ? 'error' : warningCount ? 'warning' : validation.report ? 'ok' : 'unknown'}
          title={validationSummary(validation.report, validation.checking, validation.error)}
        >
          {errorCount
            ? `${errorCount} ${errorCount === 1 ? 'error' : 'errors'}`
            : warningCount
              ? `${warningCount} ${warningCount === 1 ? 'warning' : 'warnings'}`
              : validation.report
                ? 'Valid'
                : 'Checking…'}
        </span>
        <button type="button" className="button" onClick={() => exportWorkflow(definition)}>
          <DownloadIcon />
          Export
        </button>
        {saved.id ? (
          <button type="button" className="button" disabled={publishing} onClick={() => void togglePublish()}>
            {saved.published ? 'Unpublish' : 'Publish'}
          </button>
        ) : null}
        <button
          type="button"
          className="button button--primary"
          aria-keyshortcuts="Control+S"
          title="Save (Ctrl+S)"
          disabled={saving || (!dirty && saved.id !== null)}
          onClick={() => void save()}
        >
          <SaveIcon />
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>

      {banner ? (
        <div
          className={banner.kind === 'info' || banner.kind === 'note' ? 'banner banner--info' : 'banner banner--error'}
          role={banner.kind === 'info' || banner.kind === 'note' ? 'status' : 'alert'}
        >
          <p>
            {banner.kind === 'conflict'
              ? `Someone else saved this workflow${banner.current ? ` (now version ${banner.current})` : ''} after you opened version ${saved.version ?? ''}. Reload to get their version, or save yours over it.`
              : banner.kind === 'invalid'
                ? `Not saved: ${errorCount} ${errorCount === 1 ? 'problem needs' : 'problems need'} fixing first. They are listed under the canvas.`
                : banner.kind === 'unnamed'
                  ? 'Give the workflow a name before saving it.'
                  : banner.message}
          </p>
          <div className="banner__actions">
            {banner.kind === 'conflict' ? (
              <>
                <button
                  type="button"
                  className="button button--small button--primary"
                  onClick={() => void reloadLatest()}
                >
                  Reload latest
                </button>
                <button type="button" className="button button--small" onClick={() => void save(true)}>
                  Save mine anyway
                </button>
              </>
            ) : null}
            <button type="button" className="button button--small button--ghost" onClick={() => setBanner(null)}>
              Dismiss
            </button>
          </div>
        </div>
      ) : null}

      <div
        className="editor__body"
        // The chosen width goes through the CSSOM (a custom property), which the Content Security Policy allows.
        style={sideWidth.width === null ? undefined : ({ '--side-width': `${sideWidth.width}px` } as CSSProperties)}
      >
        <Palette onAdd={placeNode} />
        <section className="editor__canvas" aria-label="Canvas">
          <Canvas
            nodes={doc.nodes}
            edges={doc.edges}
            dispatch={dispatch}
            decorations={decorations}
            onAdded={onDropped}
            wrapperRef={wrapperRef}
          />
          <ProblemsPanel
            report={validation.report}
            checking={validation.checking}
            error={validation.error}
            locate={(issue) => describeIssueTarget(issue, doc)}
            onSelect={(issue) => selectElement(issue.edge_id ?? issue.node_id ?? null)}
          />
        </section>
        <aside ref={sideRef} id={`${sideId}-side`} className="side" aria-label="Inspector">
          <PanelResizer
            label="Resize the side panel"
            controls={`${sideId}-side`}
            panelRef={sideRef}
            panel={sideWidth}
          />
          <Tabs
            items={sideTabs}
            value={tab}
            onChange={setTab}
            label="Inspector views"
            idBase={sideId}
            className="side__tabs"
          />
          <div className="side__body" role="tabpanel" id={ids.panel} aria-labelledby={ids.tab}>
            {tab === 'properties' ? (
              <PropertiesPanel
                doc={doc}
                dispatch={dispatch}
                tools={tools.data}
                toolsError={tools.error}
                defaultModel={config.model}
                nodeIssues={nodeIssues}
                edgeIssues={edgeIssues}
                onSelect={selectElement}
                onManageConnections={() => setManagingConnections(true)}
              />
            ) : tab === 'history' ? (
              <HistoryPanel
                api={api}
                workflowId={saved.id}
                currentVersion={saved.version}
                dirty={dirty}
                onRestored={onRestored}
              />
            ) : tab === 'code' ? (
              <CodePanel api={api} definition={definition} onShowProblems={() => setTab('properties')} />
            ) : (
              <RunPanel
                api={api}
                run={run}
                workflowId={saved.id}
                savedVersion={saved.version}
                dirty={dirty}
                describeNode={describeNode}
                onSelectNode={selectElement}
              />
            )}
          </div>
        </aside>
      </div>

      <p className="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>

      {managingConnections ? (
        <Modal
          title="Connections"
          wide
          onClose={() => {
            setManagingConnections(false);
            tools.reload();
          }}
        >
          <ConnectionsPanel client={client} isAdmin={isAdmin} returnTo={connectionsUrl} embedded />
        </Modal>
      ) : null}

      <ConfirmDialog
        open={leaving}
        title="Leave without saving?"
        confirmLabel="Leave"
        destructive
        onConfirm={() => {
          setLeaving(false);
          onLeave();
        }}
        onCancel={() => setLeaving(false)}
      >
        <p>Your changes to “{doc.name || 'this workflow'}” have not been saved and will be lost.</p>
      </ConfirmDialog>
    </main>
  );
}
