import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, describeError } from '../../../../shared/api/api-error';
import { SESSION_PAGE_SIZE, type PlaygroundApi, type Session } from '../../api/playground-api';

export interface Sessions {
  sessions: Session[];
  loading: boolean;
  error: string | null;
  hasMore: boolean;
  loadingMore: boolean;
  loadMore: () => void;
  /** Re-reads the first page (after a turn: counts, names and order change) and keeps what was paged in. */
  refresh: () => void;
  retry: () => void;
  create: (name?: string) => Promise<Session>;
  rename: (id: string, name: string) => Promise<Session>;
  remove: (id: string) => Promise<void>;
  /** Drops a session the service no longer has, without asking it. */
  forget: (id: string) => void;
}

function merge(firstPage: Session[], current: Session[]): Session[] {
  const seen = new Set(firstPage.map((s) => s.session_id));
  return [...firstPage, ...current.filter((s) => !seen.has(s.session_id))];
}

/** The caller's playground sessions, newest activity first as the service orders them. */
export function useSessions(api: PlaygroundApi): Sessions {
  const [sessions, setSessions] = useState<Session[]>([]);
  const [attempt, setAttempt] = useState(0);
  /** The first-page request that last answered, and its error if it failed. */
  const [loaded, setLoaded] = useState<{ attempt: number; error: string | null } | null>(null);
  const [moreError, setMoreError] = useState<string | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [loadingMore, setLoadingMore] = useState(false);
  const countRef = useRef(0);
  useEffect(() => {
    countRef.current = sessions.length;
  }, [sessions]);

  useEffect(() => {
    const controller = new AbortController();
    api.listSessions(0, controller.signal).then(
      (page) => {
        if (controller.signal.aborted) return;
        setSessions(page);
        setHasMore(page.length >= SESSION_PAGE_SIZE);
        setLoaded({ attempt, error: null });
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return;
        setLoaded({ attempt, error: describeError(failure) });
      },
    );
    return () => controller.abort();
  }, [api, attempt]);

  const loadMore = useCallback(() => {
    setLoadingMore(true);
    setMoreError(null);
    api.listSessions(countRef.current).then(
      (page) => {
        setSessions((current) => merge(current, page));
        setHasMore(page.length >= SESSION_PAGE_SIZE);
        setLoadingMore(false);
      },
      (failure: unknown) => {
        setMoreError(describeError(failure));
        setLoadingMore(false);
      },
    );
  }, [api]);

  const refresh = useCallback(() => {
    api.listSessions(0).then(
      (page) => setSessions((current) => merge(page, current)),
      () => undefined, // A stale list is better than an error banner after a turn that worked.
    );
  }, [api]);

  const retry = useCallback(() => {
    setMoreError(null);
    setAttempt((n) => n + 1);
  }, []);

  const create = useCallback(
    async (name?: string) => {
      const session = await api.createSession(name);
      setSessions((current) => [{ message_count: 0, ...session }, ...current]);
      return session;
    },
    [api],
  );

  const rename = useCallback(
    async (id: string, name: string) => {
      const session = await api.renameSession(id, name);
      setSessions((current) => current.map((s) => (s.session_id === id ? { ...s, ...session } : s)));
      return session;
    },
    [api],
  );

  const remove = useCallback(
    async (id: string) => {
      try {
        await api.deleteSession(id);
      } catch (failure) {
        // Already gone is what was asked for.
        if (!(failure instanceof ApiError && failure.status === 404)) throw failure;
      }
      setSessions((current) => current.filter((s) => s.session_id !== id));
    },
    [api],
  );

  const forget = useCallback((id: string) => {
    setSessions((current) => current.filter((s) => s.session_id !== id));
  }, []);

  const fresh = loaded?.attempt === attempt;
  const loading = !fresh;
  const error = (fresh ? loaded.error : null) ?? moreError;
  return { sessions, loading, error, hasMore, loadingMore, loadMore, refresh, retry, create, rename, remove, forget };
}
