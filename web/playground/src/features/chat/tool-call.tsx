import { prettyJson } from '../../../../shared/ui/format';
import { WrenchIcon } from '../../../../shared/ui/icons';
import type { ToolPart } from './chat-model';

function resultText(result: unknown): string {
  // MCP-style results carry a list of content blocks; their text is what people want to read.
  if (Array.isArray(result) && result.every((b) => typeof b === 'object' && b !== null && 'text' in b)) {
    return result.map((b: { text: unknown }) => prettyJson(b.text)).join('\n\n');
  }
  return prettyJson(result);
}

/** One tool call inside an answer: name and state at a glance, arguments and result when opened. */
export function ToolCallView({ call, interrupted }: { call: ToolPart; interrupted: boolean }) {
  // A call that waits for the person did not fail as such: the card under it says what it needs.
  const state = call.needs
    ? 'waiting'
    : call.done
      ? call.isError
        ? 'error'
        : 'done'
      : interrupted
        ? 'interrupted'
        : 'running';
  const label = {
    done: 'done',
    error: 'failed',
    running: 'running',
    interrupted: 'no result',
    waiting: call.needs?.kind === 'connect' ? 'needs sign-in' : 'needs approval',
  }[state];
  const args = prettyJson(call.args);

  return (
    <details className={`tool-call tool-call--${state}`}>
      <summary className="tool-call__summary">
        <WrenchIcon />
        <span className="visually-hidden">Tool call </span>
        <span className="tool-call__name">{call.name}</span>
        <span className={`badge tool-call__state tool-call__state--${state}`}>
          {state === 'running' ? <span className="spinner" aria-hidden="true" /> : null}
          {label}
        </span>
      </summary>
      <div className="tool-call__body">
        <p className="tool-call__label">Arguments</p>
        <pre className="code-block">{args || '{}'}</pre>
        {call.done ? (
          <>
            <p className="tool-call__label">{call.isError ? 'Error' : 'Result'}</p>
            <pre className={call.isError ? 'code-block code-block--error' : 'code-block'}>
              {resultText(call.result) || '(empty)'}
            </pre>
          </>
        ) : null}
      </div>
    </details>
  );
}
