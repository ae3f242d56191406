import { useId, useRef, useState, type KeyboardEvent } from 'react';
import { CloseIcon, RefreshIcon } from '../../../../shared/ui/icons';
import type { PlaygroundApi } from '../../api/playground-api';
import { LogsTab } from './logs-tab';
import { MetricsTab } from './metrics-tab';
import { TraceTab } from './trace-tab';

const TABS = [
  { id: 'trace', label: 'Trace' },
  { id: 'logs', label: 'Logs' },
  { id: 'metrics', label: 'Metrics' },
] as const;
type TabId = (typeof TABS)[number]['id'];

export interface ObservabilityPanelProps {
  api: PlaygroundApi;
  sessionId: string | null;
  /** Grows after every turn (and on Refresh): the open tab loads again. */
  refreshKey: number;
  onClose: () => void;
  headingId: string;
}

/** Traces, logs and metrics of the selected session, in tabs (arrow keys move between them). */
export function ObservabilityPanel({ api, sessionId, refreshKey, onClose, headingId }: ObservabilityPanelProps) {
  const [tab, setTab] = useState<TabId>('trace');
  const [manualRefresh, setManualRefresh] = useState(0);
  const tabRefs = useRef(new Map<TabId, HTMLButtonElement>());
  const baseId = useId();

  function onTabKeyDown(event: KeyboardEvent<HTMLButtonElement>) {
    const index = TABS.findIndex((t) => t.id === tab);
    let next: number | undefined;
    if (event.key === 'ArrowRight') next = (index + 1) % TABS.length;
    else if (event.key === 'ArrowLeft') next = (index - 1 + TABS.length) % TABS.length;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = TABS.length - 1;
    if (next === undefined) return;
    event.preventDefault();
    const id = TABS[next]?.id;
    if (!id) return;
    setTab(id);
    tabRefs.current.get(id)?.focus();
  }

  const key = refreshKey + manualRefresh;
  return (
    <div className="observability">
      <div className="observability__top">
        <h2 id={headingId} className="observability__heading">
          Observability
        </h2>
        <button
          type="button"
          className="icon-button"
          aria-label="Refresh"
          title="Refresh"
          disabled={sessionId === null}
          onClick={() => setManualRefresh((n) => n + 1)}
        >
          <RefreshIcon />
        </button>
        <button type="button" className="icon-button" aria-label="Close panel" title="Close" onClick={onClose}>
          <CloseIcon />
        </button>
      </div>
      <div className="tabs" role="tablist" aria-label="Observability views">
        {TABS.map((t) => (
          <button
            key={t.id}
            ref={(el) => {
              if (el) tabRefs.current.set(t.id, el);
              else tabRefs.current.delete(t.id);
            }}
            type="button"
            role="tab"
            id={`${baseId}-${t.id}-tab`}
            className="tabs__tab"
            aria-selected={tab === t.id}
            aria-controls={`${baseId}-${t.id}-panel`}
            tabIndex={tab === t.id ? 0 : -1}
            onClick={() => setTab(t.id)}
            onKeyDown={onTabKeyDown}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div
        className="observability__body"
        role="tabpanel"
        id={`${baseId}-${tab}-panel`}
        aria-labelledby={`${baseId}-${tab}-tab`}
        tabIndex={0}
      >
        {sessionId === null ? (
          <p className="panel-note">Select or start a session to see its traces, logs and metrics.</p>
        ) : tab === 'trace' ? (
          <TraceTab key={sessionId} api={api} sessionId={sessionId} refreshKey={key} />
        ) : tab === 'logs' ? (
          <LogsTab key={sessionId} api={api} sessionId={sessionId} refreshKey={key} />
        ) : (
          <MetricsTab key={sessionId} api={api} sessionId={sessionId} refreshKey={key} />
        )}
      </div>
    </div>
  );
}
