import { useCallback, useEffect, useRef, useState } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import {
  WorkflowInvalidError,
  type BuilderApi,
  type ValidationReport,
  type WorkflowDefinition,
} from '../../api/builder-api';
import { semanticKey } from './editor-state';

/** How long the editor waits after the last change before it asks the service to check the workflow. */
export const VALIDATE_DEBOUNCE_MS = 350;

export interface Validation {
  /** The last report that arrived; kept on screen while a newer check runs, so the highlights do not flicker. */
  report: ValidationReport | null;
  /** A check for the current state has not answered yet. */
  checking: boolean;
  /** Why the last check failed (the service is unreachable, or the workflow's shape is refused). */
  error: string | null;
  /** Shows a report that arrived another way (a refused save) for the current state. */
  show: (report: ValidationReport) => void;
}

/** For validation, an empty name is left out (the service accepts a nameless draft) rather than refused. */
function forValidation(definition: WorkflowDefinition): WorkflowDefinition {
  if (definition.name) return definition;
  const { name: _, ...rest } = definition;
  return rest as WorkflowDefinition;
}

/** Checks the workflow with the service a moment after every change that can change the verdict. */
export function useValidation(api: BuilderApi, definition: WorkflowDefinition): Validation {
  const key = semanticKey(definition);
  const [result, setResult] = useState<{ key: string; report: ValidationReport | null; error: string | null }>({
    key: '',
    report: null,
    error: null,
  });
  const latest = useRef(definition);

  useEffect(() => {
    latest.current = definition;
  });

  useEffect(() => {
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      api.validate(forValidation(latest.current), controller.signal).then(
        (report) => setResult({ key, report, error: null }),
        (failure: unknown) => {
          if (controller.signal.aborted) return;
          if (failure instanceof WorkflowInvalidError) {
            setResult({ key, report: failure.report, error: null });
            return;
          }
          setResult((previous) => ({ key, report: previous.report, error: describeError(failure) }));
        },
      );
    }, VALIDATE_DEBOUNCE_MS);
    return () => {
      window.clearTimeout(timer);
      controller.abort();
    };
  }, [api, key]);

  const show = useCallback((report: ValidationReport) => {
    setResult({ key: semanticKey(latest.current), report, error: null });
  }, []);

  return { report: result.report, checking: result.key !== key, error: result.key === key ? result.error : null, show };
}
