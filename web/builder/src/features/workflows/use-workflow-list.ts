import { useCallback, useRef, useState } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import { useAsync } from '../../../../shared/ui/use-async';
import type { BuilderApi, WorkflowSummary } from '../../api/builder-api';

export interface WorkflowList {
  items: WorkflowSummary[];
  total: number;
  loading: boolean;
  /** The first page failed (with a retry); a later page's failure is `moreError`. */
  error: unknown;
  loadingMore: boolean;
  moreError: string | null;
  hasMore: boolean;
  loadMore: () => void;
  reload: () => void;
  /** Deletes on the server, then drops the row. Throws the server's error. */
  remove: (id: string) => Promise<void>;
}

type Page = { items: WorkflowSummary[]; total: number };

/** The workflows of the signed-in user, a page at a time, optionally only those with one tag. */
export function useWorkflowList(api: BuilderApi, tag: string): WorkflowList {
  const first = useAsync(`workflows:${tag}`, (signal) => api.listWorkflows(0, tag, signal));
  /** Later pages, kept only while they extend the first page they were loaded after. */
  const [more, setMore] = useState<{ after: Page; items: WorkflowSummary[]; total: number } | null>(null);
  const [removed, setRemoved] = useState<ReadonlySet<string>>(new Set());
  const [loadingMore, setLoadingMore] = useState(false);
  const [moreError, setMoreError] = useState<string | null>(null);
  const busyRef = useRef(false);

  const base = first.data;
  const extra = base !== undefined && more?.after === base ? more : null;
  const loaded = base ? [...base.items, ...(extra?.items ?? [])] : [];
  const items = loaded.filter((w) => !removed.has(w.workflow_id));
  const total = Math.max(0, (extra?.total ?? base?.total ?? 0) - (loaded.length - items.length));

  const loadMore = useCallback(() => {
    if (!base || busyRef.current) return;
    busyRef.current = true;
    setLoadingMore(true);
    setMoreError(null);
    const offset = base.items.length + (extra?.items.length ?? 0);
    api
      .listWorkflows(offset, tag)
      .then(
        (page) => {
          setMore((current) => {
            const previous = current?.after === base ? current.items : [];
            const seen = new Set([...base.items, ...previous].map((w) => w.workflow_id));
            return {
              after: base,
              items: [...previous, ...page.items.filter((w) => !seen.has(w.workflow_id))],
              total: page.total,
            };
          });
        },
        (failure: unknown) => setMoreError(describeError(failure)),
      )
      .finally(() => {
        busyRef.current = false;
        setLoadingMore(false);
      });
  }, [api, base, extra, tag]);

  const remove = useCallback(
    async (id: string) => {
      await api.deleteWorkflow(id);
      setRemoved((current) => new Set([...current, id]));
    },
    [api],
  );

  return {
    items,
    total,
    loading: first.loading && base === undefined,
    error: first.error,
    loadingMore,
    moreError,
    hasMore: base !== undefined && loaded.length < (extra?.total ?? base.total),
    loadMore,
    reload: first.reload,
    remove,
  };
}
