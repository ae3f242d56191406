import { useId, useState } from 'react';
import type { Issue, ValidationReport } from '../../api/builder-api';
import { AlertIcon, CheckIcon, ErrorIcon } from '../../ui/icons';

export interface ProblemsPanelProps {
  report: ValidationReport | null;
  checking: boolean;
  error: string | null;
  /** Where an issue is, in words: "node Research (agent_1)". */
  locate: (issue: Issue) => string | undefined;
  onSelect: (issue: Issue) => void;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** One sentence for the validation state, announced politely whenever it changes. */
export function validationSummary(report: ValidationReport | null, checking: boolean, error: string | null): string {
  if (error) return `Could not check the workflow: ${error}`;
  if (!report) return 'Checking the workflow…';
  const parts: string[] = [];
  if (report.errors.length) parts.push(plural(report.errors.length, 'error', 'errors'));
  if (report.warnings.length) parts.push(plural(report.warnings.length, 'warning', 'warnings'));
  const verdict = parts.length ? parts.join(', ') : 'No problems';
  return checking ? `${verdict} (checking…)` : verdict;
}

/** The validation report under the canvas: every issue, errors first; choosing one selects what it names. */
export function ProblemsPanel({ report, checking, error, locate, onSelect }: ProblemsPanelProps) {
  const [open, setOpen] = useState(true);
  const headingId = useId();
  const listId = useId();
  const issues = report ? [...report.errors, ...report.warnings] : [];
  const severity = report?.errors.length ? 'error' : report?.warnings.length ? 'warning' : error ? 'error' : 'ok';

  return (
    <section className="problems" aria-labelledby={headingId} data-open={open}>
      <div className="problems__bar">
        <h2 id={headingId} className="problems__heading">
          <button
            type="button"
            className="problems__toggle"
            aria-expanded={open}
            aria-controls={listId}
            onClick={() => setOpen((o) => !o)}
          >
            Problems
          </button>
        </h2>
        {/* Only the verdict is announced: "checking" comes and goes with every keystroke. */}
        <p className="problems__status" data-severity={severity} role="status" aria-live="polite">
          {checking && !report ? <span className="spinner" aria-hidden="true" /> : null}
          {severity === 'ok' && report ? <CheckIcon /> : null}
          {validationSummary(report, false, error)}
        </p>
        {checking && report ? (
          <span className="problems__checking" aria-hidden="true">
            <span className="spinner spinner--tiny" /> checking
          </span>
        ) : null}
      </div>
      {open ? (
        <ul id={listId} className="problems__list" aria-label="Problems">
          {issues.length === 0 ? (
            <li className="problems__empty">{error ? error : 'Nothing to fix. The workflow can be saved and run.'}</li>
          ) : (
            issues.map((issue, index) => {
              const where = locate(issue);
              const target = issue.edge_id ?? issue.node_id;
              return (
                <li key={`${issue.code}-${target ?? ''}-${index}`}>
                  <button
                    type="button"
                    className="problem"
                    data-severity={issue.severity}
                    disabled={!target}
                    onClick={() => onSelect(issue)}
                  >
                    <span className="problem__icon">{issue.severity === 'error' ? <ErrorIcon /> : <AlertIcon />}</span>
                    <span className="visually-hidden">{issue.severity === 'error' ? 'Error:' : 'Warning:'}</span>
                    <span className="problem__message">{issue.message}</span>
                    {where ? <span className="problem__where">{where}</span> : null}
                  </button>
                </li>
              );
            })
          )}
        </ul>
      ) : null}
    </section>
  );
}
