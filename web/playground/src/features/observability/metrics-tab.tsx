import { PendingState } from '../../../../shared/ui/pending-state';
import { formatDuration, formatNumber } from '../../../../shared/ui/format';
import { useAsync, useReloadOn } from '../../../../shared/ui/use-async';
import type { Metrics, PlaygroundApi } from '../../api/playground-api';

const STATS: { key: keyof Metrics; label: string; format: (n: number) => string; alarm?: boolean }[] = [
  { key: 'message_count', label: 'Messages', format: formatNumber },
  { key: 'total_tokens', label: 'Total tokens', format: formatNumber },
  { key: 'average_latency_ms', label: 'Average latency', format: formatDuration },
  { key: 'tool_call_count', label: 'Tool calls', format: formatNumber },
  { key: 'error_count', label: 'Errors', format: formatNumber, alarm: true },
];

/** The session's totals as a small grid of figures. */
export function MetricsTab({
  api,
  sessionId,
  refreshKey,
}: {
  api: PlaygroundApi;
  sessionId: string;
  refreshKey: number;
}) {
  const metrics = useAsync(sessionId, (signal) => api.metrics(sessionId, signal));
  const { reload } = metrics;

  useReloadOn(refreshKey, reload);

  if (metrics.data === undefined) return <PendingState error={metrics.error} what="metrics" onRetry={reload} />;

  const data = metrics.data;
  return (
    <dl className="stat-grid">
      {STATS.map(({ key, label, format, alarm }) => {
        const value = Number(data[key]);
        return (
          <div key={key} className={`stat${alarm && value > 0 ? ' stat--alarm' : ''}`}>
            <dt className="stat__label">{label}</dt>
            <dd className="stat__value">{format(value)}</dd>
          </div>
        );
      })}
    </dl>
  );
}
