import { useId, useState } from 'react';
import type { Issue } from '../../api/builder-api';

export interface SchemaField {
  name: string;
  type: string;
  description?: string;
  required: boolean;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The top-level properties of a tool's JSON Schema, required ones first. */
export function schemaFields(schema: unknown): SchemaField[] {
  if (!isRecord(schema) || !isRecord(schema.properties)) return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === 'string') : []);
  return Object.entries(schema.properties)
    .map(([name, raw]) => {
      const prop = isRecord(raw) ? raw : {};
      const type = Array.isArray(prop.enum)
        ? prop.enum.map((v) => JSON.stringify(v)).join(' | ')
        : typeof prop.type === 'string'
          ? prop.type
          : Array.isArray(prop.type)
            ? prop.type.join(' | ')
            : 'any';
      return {
        name,
        type,
        description: typeof prop.description === 'string' ? prop.description : undefined,
        required: required.has(name),
      };
    })
    .sort((a, b) => Number(b.required) - Number(a.required));
}

/** Arguments with a placeholder for every required property, to start from. */
export function skeletonArgs(schema: unknown): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const field of schemaFields(schema).filter((f) => f.required)) {
    args[field.name] =
      field.type === 'number' || field.type === 'integer'
        ? 0
        : field.type === 'boolean'
          ? false
          : field.type === 'array'
            ? []
            : field.type === 'object'
              ? {}
              : '{{ state.input }}';
  }
  return args;
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

function parseArgs(text: string): { args: Record<string, unknown> } | { error: string } {
  if (!text.trim()) return { args: {} };
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? { args: value } : { error: 'The arguments must be a JSON object: { "name": value }.' };
  } catch (failure) {
    return { error: `Not valid JSON yet: ${failure instanceof Error ? failure.message : String(failure)}` };
  }
}

/**
 * The tool's arguments as JSON. The text is the editor's own while it is being typed; each time it parses to an
 * object, that object becomes the node's arguments. Arguments changed from outside (undo) replace the text.
 */
export function ArgsEditor({
  args,
  schema,
  issues,
  onChange,
}: {
  args: Record<string, unknown>;
  schema: unknown;
  issues: Issue[];
  onChange: (args: Record<string, unknown>) => void;
}) {
  const id = useId();
  const [text, setText] = useState(() => pretty(args));
  const [seen, setSeen] = useState(args);
  if (seen !== args) {
    setSeen(args);
    const parsed = parseArgs(text);
    if (!('args' in parsed) || pretty(parsed.args) !== pretty(args)) setText(pretty(args));
  }
  const parsed = parseArgs(text);
  const error = 'error' in parsed ? parsed.error : undefined;
  const serverIssues = issues.filter((i) => i.field === 'data.args' || i.field?.startsWith('data.args.'));
  const fields = schemaFields(schema);
  const describedBy = [`${id}-hint`, error || serverIssues.length ? `${id}-error` : ''].filter(Boolean).join(' ');

  return (
    <div className="field">
      <div className="field__label-row">
        <label htmlFor={id}>Arguments (JSON)</label>
        {fields.some((f) => f.required) && Object.keys(args).length === 0 ? (
          <button type="button" className="link-button" onClick={() => onChange(skeletonArgs(schema))}>
            Fill in from the schema
          </button>
        ) : null}
      </div>
      <textarea
        id={id}
        className="input textarea textarea--code"
        rows={6}
        spellCheck={false}
        value={text}
        aria-invalid={error || serverIssues.length ? true : undefined}
        aria-describedby={describedBy}
        onChange={(event) => {
          setText(event.target.value);
          const next = parseArgs(event.target.value);
          if ('args' in next) onChange(next.args);
        }}
      />
      <p id={`${id}-hint`} className="field-hint">
        Strings may hold templates over the run state: <code>{'{{ state.input }}'}</code>, or another node&apos;s result
        as <code>{'{{ state.agent_1 }}'}</code>.
      </p>
      {error || serverIssues.length ? (
        <ul id={`${id}-error`} className="field-issues">
          {error ? <li data-severity="error">{error}</li> : null}
          {serverIssues.map((issue, index) => (
            <li key={index} data-severity={issue.severity}>
              {issue.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** The tool's input schema as a short list, next to the arguments it documents. */
export function SchemaHelp({ schema }: { schema: unknown }) {
  const fields = schemaFields(schema);
  if (fields.length === 0) return <p className="field-hint">This tool takes no arguments.</p>;
  return (
    <details className="schema-help" open>
      <summary>Input schema</summary>
      <dl>
        {fields.map((f) => (
          <div key={f.name}>
            <dt>
              <code>{f.name}</code> <span className="schema-help__type">{f.type}</span>
              {f.required ? <span className="badge badge--accent">required</span> : null}
            </dt>
            {f.description ? <dd>{f.description}</dd> : null}
          </div>
        ))}
      </dl>
    </details>
  );
}
