import { useId, useState, type ReactNode } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import { PlusIcon, TrashIcon } from '../../../../shared/ui/icons';
import type { Issue, NodeData, ToolInfo } from '../../api/builder-api';
import { NodeTypeIcon } from '../../ui/icons';
import {
  connect,
  removeElements,
  updateEdge,
  updateNodeData,
  type Doc,
  type EditorAction,
  type FlowEdge,
  type FlowNode,
} from './editor-state';
import { kindOf } from './node-catalog';
import { TagInput } from './tag-input';
import { ArgsEditor, SchemaHelp } from './tool-args';

export interface PropertiesPanelProps {
  doc: Doc;
  dispatch: (action: EditorAction) => void;
  tools: ToolInfo[] | undefined;
  toolsError: unknown;
  /** The service's model, shown as what an agent without a model uses. */
  defaultModel: string;
  nodeIssues: ReadonlyMap<string, Issue[]>;
  edgeIssues: ReadonlyMap<string, Issue[]>;
  /** Selects one node or edge (or nothing), e.g. from a node's list of branches. */
  onSelect: (id: string | null) => void;
  /** Opens the connections, which add the tools of upstream MCP servers. */
  onManageConnections: () => void;
}

type Edit = (update: (doc: Doc) => Doc, coalesce?: string) => void;

/**
 * The field an issue names, as this panel calls it: the service names fields by their path in the node or edge
 * (`data.system_prompt`, `data.args.query`); the panel by the first key inside `data` (`system_prompt`, `args`).
 */
export function fieldOf(issue: Issue): string | undefined {
  return issue.field?.replace(/^data\./, '').split('.')[0];
}

/** What the selection is, in the panel's heading. */
export function nodeName(node: FlowNode): string {
  return node.data.label?.trim() || kindOf(node.type).title;
}

/**
 * The properties of what is selected: a node's fields by type, an edge's label and condition, or, with nothing
 * selected, the workflow's own name, description and tags. Every change is an undo step; typing into one field
 * is one step per pause.
 */
export function PropertiesPanel(props: PropertiesPanelProps) {
  const { doc, dispatch } = props;
  const edit: Edit = (update, coalesce) => dispatch({ type: 'edit', update, coalesce, at: Date.now() });
  const nodes = doc.nodes.filter((n) => n.selected);
  const edges = doc.edges.filter((e) => e.selected);

  if (nodes.length + edges.length > 1) {
    const ids = new Set([...nodes.map((n) => n.id), ...edges.map((e) => e.id)]);
    return (
      <div className="props">
        <h3 className="props__title">{ids.size} items selected</h3>
        <p className="props__hint">Select one node or edge to edit it.</p>
        <button
          type="button"
          className="button button--danger-ghost"
          onClick={() => edit((d) => removeElements(d, ids))}
        >
          <TrashIcon />
          Delete selected
        </button>
      </div>
    );
  }
  if (nodes[0]) return <NodeProperties key={nodes[0].id} node={nodes[0]} edit={edit} {...props} />;
  if (edges[0]) return <EdgeProperties key={edges[0].id} edge={edges[0]} edit={edit} {...props} />;
  return <WorkflowSettings doc={doc} edit={edit} />;
}

function FieldIssues({ issues, field, id }: { issues: Issue[]; field: string; id: string }) {
  const mine = issues.filter((i) => fieldOf(i) === field);
  if (mine.length === 0) return null;
  return (
    <ul id={id} className="field-issues">
      {mine.map((issue, index) => (
        <li key={index} data-severity={issue.severity}>
          {issue.message}
        </li>
      ))}
    </ul>
  );
}

/** A labelled field with the issues validation found in it. */
function Field({
  label,
  field,
  issues,
  hint,
  children,
}: {
  label: string;
  field: string;
  issues: Issue[];
  hint?: ReactNode;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ReactNode;
}) {
  const id = useId();
  const issueId = `${id}-issues`;
  const hintId = `${id}-hint`;
  const invalid = issues.some((i) => fieldOf(i) === field);
  const describedBy = [invalid ? issueId : '', hint ? hintId : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, describedBy, invalid })}
      {hint ? (
        <p id={hintId} className="field-hint">
          {hint}
        </p>
      ) : null}
      <FieldIssues issues={issues} field={field} id={issueId} />
    </div>
  );
}

/** Issues that no one field owns, at the top of the panel. */
function GeneralIssues({ issues, fields }: { issues: Issue[]; fields: string[] }) {
  const general = issues.filter((i) => {
    const field = fieldOf(i);
    return !field || !fields.includes(field);
  });
  if (general.length === 0) return null;
  return (
    <ul className="props__issues" aria-label="Problems here">
      {general.map((issue, index) => (
        <li key={index} data-severity={issue.severity}>
          {issue.message}
        </li>
      ))}
    </ul>
  );
}

function WorkflowSettings({ doc, edit }: { doc: Doc; edit: Edit }) {
  const id = useId();
  return (
    <div className="props">
      <h3 className="props__title">Workflow</h3>
      <p className="props__hint">Select a node or an edge on the canvas to edit it.</p>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          className="input"
          value={doc.name}
          maxLength={200}
          aria-invalid={doc.name.trim() === '' ? true : undefined}
          onChange={(event) => {
            const name = event.target.value;
            edit((d) => ({ ...d, name }), 'workflow:name');
          }}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-description`}>Description</label>
        <textarea
          id={`${id}-description`}
          className="input textarea"
          rows={3}
          maxLength={2000}
          value={doc.description}
          onChange={(event) => {
            const description = event.target.value;
            edit((d) => ({ ...d, description }), 'workflow:description');
          }}
        />
      </div>
      <TagInput tags={doc.tags} onChange={(tags) => edit((d) => ({ ...d, tags }))} />
      <dl className="props__facts">
        <div>
          <dt>Nodes</dt>
          <dd>{doc.nodes.length}</dd>
        </div>
        <div>
          <dt>Edges</dt>
          <dd>{doc.edges.length}</dd>
        </div>
      </dl>
    </div>
  );
}

const NODE_FIELDS = ['label', 'system_prompt', 'prompt', 'model', 'tools', 'tool', 'args', 'question'];

function NodeProperties({
  node,
  doc,
  edit,
  tools,
  toolsError,
  defaultModel,
  nodeIssues,
  onSelect,
  onManageConnections,
}: PropertiesPanelProps & { node: FlowNode; edit: Edit }) {
  const kind = kindOf(node.type);
  const issues = nodeIssues.get(node.id) ?? [];
  const set = (patch: Partial<NodeData>, field: string) =>
    edit((d) => updateNodeData(d, node.id, patch), `${node.id}:${field}`);
  const outgoing = doc.edges.filter((e) => e.source === node.id);

  return (
    <div className="props">
      <div className="props__head">
        <span className="props__icon" data-type={node.type}>
          <NodeTypeIcon type={node.type} />
        </span>
        <div>
          <h3 className="props__title">{kind.title} node</h3>
          <p className="props__id">
            id <code>{node.id}</code>
          </p>
        </div>
      </div>
      <GeneralIssues issues={issues} fields={NODE_FIELDS} />

      <Field label="Label" field="label" issues={issues}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            className="input"
            value={node.data.label ?? ''}
            maxLength={200}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onChange={(event) => set({ label: event.target.value }, 'label')}
          />
        )}
      </Field>

      {node.type === 'agent' ? (
        <>
          <Field label="System prompt" field="system_prompt" issues={issues}>
            {({ id, describedBy, invalid }) => (
              <textarea
                id={id}
                className="input textarea textarea--code"
                rows={7}
                value={node.data.system_prompt ?? node.data.prompt ?? ''}
                aria-describedby={describedBy}
                aria-invalid={invalid || undefined}
                onChange={(event) => set({ system_prompt: event.target.value, prompt: undefined }, 'system_prompt')}
              />
            )}
          </Field>
          <Field
            label="Model"
            field="model"
            issues={issues}
            hint={`Leave empty for the service's model (${defaultModel}).`}
          >
            {({ id, describedBy, invalid }) => (
              <input
                id={id}
                className="input"
                value={node.data.model ?? ''}
                placeholder={defaultModel}
                spellCheck={false}
                aria-describedby={describedBy}
                aria-invalid={invalid || undefined}
                onChange={(event) => set({ model: event.target.value || undefined }, 'model')}
              />
            )}
          </Field>
          <ToolChoice
            tools={tools}
            toolsError={toolsError}
            chosen={node.data.tools ?? []}
            issues={issues}
            onChange={(chosen) => set({ tools: chosen }, 'tools-toggle')}
          />
          <ManageConnections onOpen={onManageConnections} />
        </>
      ) : null}

      {node.type === 'tool' ? (
        <>
          <ToolNodeFields node={node} tools={tools} toolsError={toolsError} issues={issues} set={set} />
          <ManageConnections onOpen={onManageConnections} />
        </>
      ) : null}

      {node.type === 'human' ? (
        <Field
          label="Question"
          field="question"
          issues={issues}
          hint="What the run asks when it pauses here. The answer is stored under this node's id."
        >
          {({ id, describedBy, invalid }) => (
            <textarea
              id={id}
              className="input textarea"
              rows={3}
              value={node.data.question ?? ''}
              aria-describedby={describedBy}
              aria-invalid={invalid || undefined}
              onChange={(event) => set({ question: event.target.value }, 'question')}
            />
          )}
        </Field>
      ) : null}

      {kind.outputs ? <Branches node={node} doc={doc} edges={outgoing} edit={edit} onSelect={onSelect} /> : null}

      <div className="props__footer">
        <button
          type="button"
          className="button button--danger-ghost"
          onClick={() => edit((d) => removeElements(d, new Set([node.id])))}
        >
          <TrashIcon />
          Delete node
        </button>
      </div>
    </div>
  );
}

/** Where the tools of other MCP servers come from, under the tool choice. */
function ManageConnections({ onOpen }: { onOpen: () => void }) {
  return (
    <p className="field-hint props__connections">
      More tools come from connections to other MCP servers.{' '}
      <button type="button" className="link-button" aria-haspopup="dialog" onClick={onOpen}>
        Manage connections
      </button>
    </p>
  );
}

function ToolChoice({
  tools,
  toolsError,
  chosen,
  issues,
  onChange,
}: {
  tools: ToolInfo[] | undefined;
  toolsError: unknown;
  chosen: string[];
  issues: Issue[];
  onChange: (tools: string[]) => void;
}) {
  const [filter, setFilter] = useState('');
  const id = useId();
  const available = tools ?? [];
  const unknown = chosen.filter((name) => !available.some((t) => t.name === name));
  const shown = available.filter(
    (t) =>
      !filter ||
      t.name.toLowerCase().includes(filter.toLowerCase()) ||
      t.description.toLowerCase().includes(filter.toLowerCase()),
  );
  const toggle = (name: string, on: boolean) =>
    onChange(on ? [...chosen.filter((n) => n !== name), name] : chosen.filter((n) => n !== name));

  return (
    <fieldset className="field fieldset">
      <legend className="field-label">
        Allowed tools <span className="badge">{chosen.length}</span>
      </legend>
      {toolsError !== undefined ? (
        <p className="form-error">Could not load the tools: {describeError(toolsError)}</p>
      ) : tools === undefined ? (
        <p className="field-hint">
          <span className="spinner" aria-hidden="true" /> Loading tools…
        </p>
      ) : available.length === 0 ? (
        <p className="field-hint">The service offers no tools.</p>
      ) : (
        <>
          {available.length > 6 ? (
            <input
              className="input input--small"
              type="search"
              aria-label="Filter tools"
              placeholder="Filter tools"
              value={filter}
              onChange={(event) => setFilter(event.target.value)}
            />
          ) : null}
          <ul className="checklist">
            {shown.map((t) => (
              <li key={t.name}>
                <input
                  id={`${id}-${t.name}`}
                  type="checkbox"
                  checked={chosen.includes(t.name)}
                  onChange={(event) => toggle(t.name, event.target.checked)}
                  aria-describedby={`${id}-${t.name}-desc`}
                />
                <label htmlFor={`${id}-${t.name}`}>
                  <code>{t.name}</code>
                  <span id={`${id}-${t.name}-desc`} className="checklist__desc">
                    {t.description}
                  </span>
                </label>
              </li>
            ))}
          </ul>
        </>
      )}
      {unknown.map((name) => (
        <p key={name} className="field-issues__line" data-severity="warning">
          <code>{name}</code> is not offered by the service.{' '}
          <button type="button" className="link-button" onClick={() => toggle(name, false)}>
            Remove
          </button>
        </p>
      ))}
      <FieldIssues issues={issues} field="tools" id={`${id}-issues`} />
    </fieldset>
  );
}

function ToolNodeFields({
  node,
  tools,
  toolsError,
  issues,
  set,
}: {
  node: FlowNode;
  tools: ToolInfo[] | undefined;
  toolsError: unknown;
  issues: Issue[];
  set: (patch: Partial<NodeData>, field: string) => void;
}) {
  const chosen = tools?.find((t) => t.name === node.data.tool);
  const missing = node.data.tool && tools && !chosen;
  return (
    <>
      <Field label="Tool" field="tool" issues={issues}>
        {({ id, describedBy, invalid }) => (
          <select
            id={id}
            className="input"
            value={node.data.tool ?? ''}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onChange={(event) => set({ tool: event.target.value || undefined }, 'tool')}
          >
            <option value="">
              {tools === undefined && toolsError === undefined ? 'Loading tools…' : 'Choose a tool'}
            </option>
            {missing ? <option value={node.data.tool}>{node.data.tool} (not offered)</option> : null}
            {(tools ?? []).map((t) => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        )}
      </Field>
      {chosen?.description ? <p className="field-hint">{chosen.description}</p> : null}
      <ArgsEditor
        key={node.id}
        args={node.data.args ?? {}}
        schema={chosen?.input_schema}
        issues={issues}
        onChange={(args) => set({ args }, 'args')}
      />
      {chosen ? <SchemaHelp schema={chosen.input_schema} /> : null}
    </>
  );
}

/** The edges out of a node: select one to edit it, or add one without dragging (for the keyboard). */
function Branches({
  node,
  doc,
  edges,
  edit,
  onSelect,
}: {
  node: FlowNode;
  doc: Doc;
  edges: FlowEdge[];
  edit: Edit;
  onSelect: (id: string | null) => void;
}) {
  const id = useId();
  const targets = doc.nodes.filter((n) => n.id !== node.id && kindOf(n.type).inputs);
  const [target, setTarget] = useState('');
  const byId = new Map(doc.nodes.map((n) => [n.id, n]));
  const router = node.type === 'router';

  return (
    <section className="props__section" aria-labelledby={`${id}-heading`}>
      <h4 id={`${id}-heading`} className="props__subtitle">
        {router ? 'Branches' : 'Next'}
      </h4>
      {router ? (
        <p className="field-hint">
          Each edge out of a router is a branch. Give all but one a condition; the one without is the default.
        </p>
      ) : null}
      {edges.length === 0 ? (
        <p className="field-hint">No edges out yet. Drag from the right-hand handle, or add one here.</p>
      ) : (
        <ul className="branch-list">
          {edges.map((e) => {
            const to = byId.get(e.target);
            return (
              <li key={e.id}>
                <button type="button" className="branch" onClick={() => onSelect(e.id)}>
                  <span className="branch__to">→ {to ? nodeName(to) : e.target}</span>
                  {router ? (
                    e.data?.condition ? (
                      <code className="branch__condition">{e.data.condition}</code>
                    ) : (
                      <span className="badge">default</span>
                    )
                  ) : null}
                  {typeof e.label === 'string' && e.label ? <span className="branch__label">{e.label}</span> : null}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      <div className="connect-row">
        <label htmlFor={`${id}-target`} className="visually-hidden">
          Connect to
        </label>
        <select
          id={`${id}-target`}
          className="input input--small"
          value={target}
          onChange={(event) => setTarget(event.target.value)}
        >
          <option value="">Connect to…</option>
          {targets.map((n) => (
            <option key={n.id} value={n.id}>
              {nodeName(n)} ({n.id})
            </option>
          ))}
        </select>
        <button
          type="button"
          className="button button--small"
          disabled={!target}
          onClick={() => {
            edit((d) => connect(d, node.id, target).doc);
            setTarget('');
          }}
        >
          <PlusIcon />
          Add edge
        </button>
      </div>
    </section>
  );
}

const EDGE_FIELDS = ['label', 'condition'];

function EdgeProperties({
  edge,
  doc,
  edit,
  edgeIssues,
  onSelect,
}: PropertiesPanelProps & { edge: FlowEdge; edit: Edit }) {
  const issues = edgeIssues.get(edge.id) ?? [];
  const source = doc.nodes.find((n) => n.id === edge.source);
  const target = doc.nodes.find((n) => n.id === edge.target);
  const fromRouter = source?.type === 'router';

  return (
    <div className="props">
      <div className="props__head">
        <div>
          <h3 className="props__title">{fromRouter ? 'Router branch' : 'Edge'}</h3>
          <p className="props__id">
            id <code>{edge.id}</code>
          </p>
        </div>
      </div>
      <p className="edge-ends">
        <button type="button" className="link-button" onClick={() => onSelect(edge.source)}>
          {source ? nodeName(source) : edge.source}
        </button>
        <span aria-hidden="true"> → </span>
        <span className="visually-hidden"> to </span>
        <button type="button" className="link-button" onClick={() => onSelect(edge.target)}>
          {target ? nodeName(target) : edge.target}
        </button>
      </p>
      <GeneralIssues issues={issues} fields={EDGE_FIELDS} />

      <Field label="Label" field="label" issues={issues} hint="Shown on the canvas and in generated code.">
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            className="input"
            value={typeof edge.label === 'string' ? edge.label : ''}
            maxLength={200}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onChange={(event) => {
              const label = event.target.value;
              edit((d) => updateEdge(d, edge.id, { label }), `${edge.id}:label`);
            }}
          />
        )}
      </Field>

      {fromRouter ? (
        <Field
          label="Condition"
          field="condition"
          issues={issues}
          hint={
            <>
              An expression over the run state, such as <code>needs_tool</code> (that key is truthy) or{' '}
              <code>score &gt;= 0.5 and not done</code>. Leave it empty for the router&apos;s default branch.
            </>
          }
        >
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              className="input input--code"
              value={edge.data?.condition ?? ''}
              placeholder="default branch"
              spellCheck={false}
              autoComplete="off"
              aria-describedby={describedBy}
              aria-invalid={invalid || undefined}
              onChange={(event) => {
                const condition = event.target.value;
                edit((d) => updateEdge(d, edge.id, { condition }), `${edge.id}:condition`);
              }}
            />
          )}
        </Field>
      ) : (
        <p className="field-hint">Conditions belong to edges that leave a router.</p>
      )}

      <div className="props__footer">
        <button
          type="button"
          className="button button--danger-ghost"
          onClick={() => edit((d) => removeElements(d, new Set([edge.id])))}
        >
          <TrashIcon />
          Delete edge
        </button>
      </div>
    </div>
  );
}
