import { useEffect, useId, useRef, useState, type ChangeEvent } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import { ConfirmDialog } from '../../../../shared/ui/confirm-dialog';
import { formatDateTime, formatRelative } from '../../../../shared/ui/format';
import { PlusIcon, TrashIcon } from '../../../../shared/ui/icons';
import { PendingState } from '../../../../shared/ui/pending-state';
import {
  WorkflowInvalidError,
  type BuilderApi,
  type WorkflowDefinition,
  type WorkflowSummary,
} from '../../api/builder-api';
import { DownloadIcon, NodeTypeIcon, UploadIcon } from '../../ui/icons';
import { STARTER_TEMPLATES, type StarterTemplate } from './templates';
import { useWorkflowList } from './use-workflow-list';
import { definitionOf, exportWorkflow, parseWorkflowFile } from './workflow-file';

export interface WorkflowListProps {
  api: BuilderApi;
  onOpen: (id: string) => void;
  onNew: () => void;
  /** An imported file the service would not save as it is: it opens as an unsaved draft to fix. */
  onDraft: (definition: WorkflowDefinition, notice: string) => void;
}

const TAG_DEBOUNCE_MS = 300;

/** The workflow list: filter by tag, new, import, export, delete. */
export function WorkflowList({ api, onOpen, onNew, onDraft }: WorkflowListProps) {
  const [tagInput, setTagInput] = useState('');
  const [tag, setTag] = useState('');
  const list = useWorkflowList(api, tag);
  const [deleting, setDeleting] = useState<WorkflowSummary | null>(null);
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);
  const [message, setMessage] = useState<{ kind: 'error' | 'info'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  /** The template being saved as a new workflow. */
  const [creating, setCreating] = useState<string | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const headingId = useId();
  const tagListId = useId();
  const [knownTags, setKnownTags] = useState<ReadonlySet<string>>(new Set());

  useEffect(() => {
    const timer = window.setTimeout(() => setTag(tagInput.trim()), TAG_DEBOUNCE_MS);
    return () => window.clearTimeout(timer);
  }, [tagInput]);

  // Remember every tag seen, so the filter can suggest them even while filtered.
  const seenTags = list.items.flatMap((w) => w.tags);
  if (seenTags.some((t) => !knownTags.has(t))) setKnownTags(new Set([...knownTags, ...seenTags]));

  async function confirmDelete() {
    if (!deleting) return;
    setDeleteBusy(true);
    setDeleteError(null);
    try {
      await list.remove(deleting.workflow_id);
      setMessage({ kind: 'info', text: `Deleted “${deleting.name}”.` });
      setDeleting(null);
    } catch (failure) {
      setDeleteError(describeError(failure));
    } finally {
      setDeleteBusy(false);
    }
  }

  async function exportOne(summary: WorkflowSummary) {
    setMessage(null);
    try {
      exportWorkflow(definitionOf(await api.getWorkflow(summary.workflow_id)));
    } catch (failure) {
      setMessage({ kind: 'error', text: describeError(failure) });
    }
  }

  async function importFile(event: ChangeEvent<HTMLInputElement>) {
    const file = event.target.files?.[0];
    event.target.value = '';
    if (!file) return;
    setBusy(true);
    setMessage(null);
    let definition: WorkflowDefinition;
    try {
      definition = parseWorkflowFile(await file.text(), file.name);
    } catch (failure) {
      setMessage({ kind: 'error', text: describeError(failure) });
      setBusy(false);
      return;
    }
    try {
      const created = await api.createWorkflow(definition);
      onOpen(created.workflow_id);
    } catch (failure) {
      if (failure instanceof WorkflowInvalidError) {
        onDraft(definition, `Imported “${definition.name}” as an unsaved draft: fix the problems below, then save.`);
      } else {
        setMessage({ kind: 'error', text: describeError(failure) });
      }
    } finally {
      setBusy(false);
    }
  }

  async function createFromTemplate(template: StarterTemplate) {
    setCreating(template.id);
    setMessage(null);
    try {
      const created = await api.createWorkflow(template.definition);
      onOpen(created.workflow_id);
    } catch (failure) {
      setMessage({ kind: 'error', text: `Could not create “${template.title}”: ${describeError(failure)}` });
      setCreating(null);
    }
  }

  const filtered = tag !== '';
  return (
    <main className="library" aria-labelledby={headingId}>
      <div className="library__inner">
        <div className="library__top">
          <div className="library__title">
            <h2 id={headingId}>Workflows</h2>
            {!list.loading && list.error === undefined ? <span className="badge">{list.total}</span> : null}
          </div>
          <div className="library__actions">
            <input
              ref={fileRef}
              type="file"
              accept="application/json,.json"
              className="visually-hidden"
              tabIndex={-1}
              aria-hidden="true"
              onChange={(event) => void importFile(event)}
            />
            <button type="button" className="button" disabled={busy} onClick={() => fileRef.current?.click()}>
              <UploadIcon />
              {busy ? 'Importing…' : 'Import JSON'}
            </button>
            <button type="button" className="button button--primary" onClick={onNew}>
              <PlusIcon />
              New workflow
            </button>
          </div>
        </div>

        <div className="library__filter">
          <label htmlFor={`${headingId}-tag`} className="field-label">
            Filter by tag
          </label>
          <input
            id={`${headingId}-tag`}
            className="input library__tag-input"
            type="search"
            list={tagListId}
            placeholder="Any tag"
            value={tagInput}
            onChange={(event) => setTagInput(event.target.value)}
          />
          <datalist id={tagListId}>
            {[...knownTags].sort().map((t) => (
              <option key={t} value={t} />
            ))}
          </datalist>
        </div>

        {message ? (
          <p
            className={message.kind === 'error' ? 'form-error' : 'notice'}
            role={message.kind === 'error' ? 'alert' : 'status'}
          >
            {message.text}
          </p>
        ) : null}

        {list.loading || list.error !== undefined ? (
          <PendingState error={list.error} what="workflows" onRetry={list.reload} />
        ) : list.items.length === 0 ? (
          <div className="library__empty">
            <div className="library__empty-art" aria-hidden="true">
              <span />
              <span />
              <span />
            </div>
            <h3>{filtered ? `No workflows tagged “${tag}”` : 'No workflows yet'}</h3>
            <p>
              {filtered
                ? 'Try another tag, or clear the filter.'
                : 'Build one on the canvas: agents, tools, routers and people, joined by edges.'}
            </p>
            {filtered ? (
              <button type="button" className="button" onClick={() => setTagInput('')}>
                Clear the filter
              </button>
            ) : (
              <>
                <button type="button" className="button button--primary" onClick={onNew}>
                  <PlusIcon />
                  New workflow
                </button>
                <StarterTemplates creating={creating} onUse={(template) => void createFromTemplate(template)} />
              </>
            )}
          </div>
        ) : (
          <table className="library__table">
            <caption className="visually-hidden">{filtered ? `Workflows tagged ${tag}` : 'All workflows'}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Tags</th>
                <th scope="col">Updated</th>
                <th scope="col" className="library__num">
                  Version
                </th>
                <th scope="col" className="library__num">
                  Nodes
                </th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.items.map((w) => (
                <tr key={w.workflow_id}>
                  <th scope="row" className="library__name-cell">
                    <button type="button" className="library__open" onClick={() => onOpen(w.workflow_id)}>
                      {w.name}
                    </button>
                    {w.description ? <span className="library__description">{w.description}</span> : null}
                    {w.published ? (
                      <span className="badge badge--success library__published" title={`MCP tool ${w.tool_name ?? ''}`}>
                        Published
                      </span>
                    ) : null}
                  </th>
                  <td>
                    <span className="tag-list">
                      {w.tags.map((t) => (
                        <button
                          key={t}
                          type="button"
                          className="tag tag--button"
                          aria-label={`Show workflows tagged ${t}`}
                          onClick={() => setTagInput(t)}
                        >
                          {t}
                        </button>
                      ))}
                    </span>
                  </td>
                  <td>
                    <time dateTime={w.updated_at} title={formatDateTime(w.updated_at)}>
                      {formatRelative(w.updated_at)}
                    </time>
                  </td>
                  <td className="library__num">v{w.version}</td>
                  <td className="library__num">{w.node_count}</td>
                  <td className="library__row-actions">
                    <button
                      type="button"
                      className="icon-button"
                      aria-label={`Export ${w.name} as JSON`}
                      title="Export JSON"
                      onClick={() => void exportOne(w)}
                    >
                      <DownloadIcon />
                    </button>
                    <button
                      type="button"
                      className="icon-button icon-button--danger"
                      aria-label={`Delete ${w.name}`}
                      title="Delete"
                      onClick={() => {
                        setDeleteError(null);
                        setDeleting(w);
                      }}
                    >
                      <TrashIcon />
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}

        {list.moreError ? (
          <p className="form-error" role="alert">
            {list.moreError}
          </p>
        ) : null}
        {list.hasMore ? (
          <button type="button" className="button library__more" onClick={list.loadMore} disabled={list.loadingMore}>
            {list.loadingMore ? 'Loading…' : 'Load more'}
          </button>
        ) : null}
      </div>

      <ConfirmDialog
        open={deleting !== null}
        title="Delete workflow?"
        confirmLabel="Delete"
        destructive
        busy={deleteBusy}
        error={deleteError}
        onConfirm={() => void confirmDelete()}
        onCancel={() => setDeleting(null)}
      >
        <p>“{deleting?.name}” will be deleted with its version history and its runs. This cannot be undone.</p>
      </ConfirmDialog>
    </main>
  );
}

/** Complete workflows to start from, each saved as a new workflow of one's own and opened. */
function StarterTemplates({
  creating,
  onUse,
}: {
  creating: string | null;
  onUse: (template: StarterTemplate) => void;
}) {
  const headingId = useId();
  return (
    <section className="templates" aria-labelledby={headingId}>
      <h4 id={headingId} className="templates__heading">
        Or start from a template
      </h4>
      <ul className="templates__list">
        {STARTER_TEMPLATES.map((template) => (
          <li key={template.id} className="template">
            <h5 className="template__title">{template.title}</h5>
            <p className="template__summary">{template.summary}</p>
            <span className="template__nodes" aria-hidden="true">
              {template.definition.nodes.map((node) => (
                <span key={node.id} className="template__node" data-type={node.type} title={node.data.label}>
                  <NodeTypeIcon type={node.type} />
                </span>
              ))}
            </span>
            <button
              type="button"
              className="button button--small template__use"
              aria-label={`Use template ${template.title}`}
              disabled={creating !== null}
              onClick={() => onUse(template)}
            >
              {creating === template.id ? 'Creating…' : 'Use template'}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
