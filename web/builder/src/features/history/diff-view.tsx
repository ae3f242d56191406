import { prettyJson } from '../../../../shared/ui/format';
import type { FieldChange, GraphDiff, WorkflowDiff, WorkflowEdge, WorkflowNode } from '../../api/builder-api';

const show = (value: unknown) => (value === undefined ? '—' : typeof value === 'string' ? value : prettyJson(value));

function ChangeTable({
  changes,
  from,
  to,
  caption,
}: {
  changes: FieldChange[];
  from: number;
  to: number;
  caption: string;
}) {
  return (
    <table className="diff-table">
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Version {from}</th>
          <th scope="col">Version {to}</th>
        </tr>
      </thead>
      <tbody>
        {changes.map((c) => (
          <tr key={c.path}>
            <th scope="row">
              <code>{c.path}</code>
            </th>
            <td className="diff-cell diff-cell--before">
              <span className="visually-hidden">Before: </span>
              <pre>{show(c.before)}</pre>
            </td>
            <td className="diff-cell diff-cell--after">
              <span className="visually-hidden">After: </span>
              <pre>{show(c.after)}</pre>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function nodeText(n: WorkflowNode): string {
  return `${n.data.label?.trim() || n.id} (${n.type}, ${n.id})`;
}

function edgeText(e: WorkflowEdge): string {
  const condition = e.data?.condition ? ` when ${e.data.condition}` : '';
  return `${e.source} → ${e.target}${e.label ? ` “${e.label}”` : ''}${condition} (${e.id})`;
}

function Section<T>({
  title,
  diff,
  describe,
  from,
  to,
}: {
  title: string;
  diff: GraphDiff<T>;
  describe: (item: T) => string;
  from: number;
  to: number;
}) {
  const empty = diff.added.length + diff.removed.length + diff.changed.length === 0;
  return (
    <section className="diff-section">
      <h3 className="diff-section__title">
        {title}
        {empty ? <span className="badge">no changes</span> : null}
        {diff.added.length ? <span className="badge badge--success">{diff.added.length} added</span> : null}
        {diff.removed.length ? <span className="badge badge--danger">{diff.removed.length} removed</span> : null}
        {diff.changed.length ? <span className="badge badge--warning">{diff.changed.length} changed</span> : null}
      </h3>
      {diff.added.length || diff.removed.length ? (
        <div className="diff-columns">
          <div>
            <h4 className="diff-columns__head">Only in version {from}</h4>
            <ul className="diff-list">
              {diff.removed.map((item) => (
                <li key={describe(item)} className="diff-list__item diff-list__item--removed">
                  <span className="visually-hidden">Removed: </span>
                  {describe(item)}
                </li>
              ))}
              {diff.removed.length === 0 ? <li className="diff-list__none">Nothing</li> : null}
            </ul>
          </div>
          <div>
            <h4 className="diff-columns__head">Only in version {to}</h4>
            <ul className="diff-list">
              {diff.added.map((item) => (
                <li key={describe(item)} className="diff-list__item diff-list__item--added">
                  <span className="visually-hidden">Added: </span>
                  {describe(item)}
                </li>
              ))}
              {diff.added.length === 0 ? <li className="diff-list__none">Nothing</li> : null}
            </ul>
          </div>
        </div>
      ) : null}
      {diff.changed.map((c) => (
        <div key={c.id} className="diff-changed">
          <h4 className="diff-changed__id">
            Changed <code>{c.id}</code>
          </h4>
          <ChangeTable changes={c.changes} from={from} to={to} caption={`Changes to ${c.id}`} />
        </div>
      ))}
    </section>
  );
}

/** A structural diff of two versions, the older on the left: workflow fields, then nodes and edges. */
export function DiffView({ diff }: { diff: WorkflowDiff }) {
  if (diff.unchanged) {
    return (
      <p className="panel-note">
        Versions {diff.from} and {diff.to} are the same.
      </p>
    );
  }
  return (
    <div className="diff">
      {diff.layout_only ? <p className="notice">Only the layout changed: nodes were moved, nothing else.</p> : null}
      {diff.fields.length ? (
        <section className="diff-section">
          <h3 className="diff-section__title">Workflow</h3>
          <ChangeTable changes={diff.fields} from={diff.from} to={diff.to} caption="Changes to the workflow's fields" />
        </section>
      ) : null}
      <Section title="Nodes" diff={diff.nodes} describe={nodeText} from={diff.from} to={diff.to} />
      <Section title="Edges" diff={diff.edges} describe={edgeText} from={diff.from} to={diff.to} />
    </div>
  );
}
