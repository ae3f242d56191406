import { describeError } from '../api/api-error';

/** What a panel shows before its data is there: the error that kept it away (with a retry), or a spinner. */
export function PendingState({ error, what, onRetry }: { error: unknown; what: string; onRetry: () => void }) {
  if (error !== undefined) {
    return (
      <div className="panel-note" role="alert">
        <p>{describeError(error)}</p>
        <button type="button" className="button button--small" onClick={onRetry}>
          Try again
        </button>
      </div>
    );
  }
  return (
    <p className="panel-note">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  );
}
