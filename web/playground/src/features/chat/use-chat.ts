import { useCallback, useEffect, useRef, useState } from 'react';
import type { ApiClient } from '../../../../shared/api/api-client';
import { ApiError, describeError } from '../../../../shared/api/api-error';
import type { PlaygroundApi, SessionDetail, Usage } from '../../api/playground-api';
import type { ChatEvent } from './chat-events';
import { applyEvents, fromStoredMessage, messageText, type ChatMessage, type MessageStatus } from './chat-model';
import { ChatSocket, type SocketStatus } from './chat-socket';
import { streamChatOverHttp } from './http-stream';

export interface Turn {
  via: 'socket' | 'http';
  stopping: boolean;
}

export interface UseChatOptions {
  client: ApiClient;
  api: PlaygroundApi;
  /** One hook instance serves one session: give the component a `key` of the session id. */
  sessionId: string;
  /** After every turn, however it ended: the moment to refresh traces, metrics and the session list. */
  onTurnEnd: (usage: Usage | undefined) => void;
  /** The service refused the socket's credentials. */
  onAuthLost: () => void;
}

export interface Chat {
  messages: ChatMessage[];
  detail: SessionDetail | undefined;
  loading: boolean;
  loadError: string | null;
  /** The session is gone (deleted elsewhere, or never was the caller's). */
  missing: boolean;
  turn: Turn | null;
  connection: SocketStatus;
  /** Starts a turn; false (and nothing sent) while one is running. */
  send: (text: string) => boolean;
  stop: () => void;
  reload: () => void;
}

interface ActiveTurn {
  key: string;
  userKey: string;
  via: 'socket' | 'http';
  /** The chat message has gone out on the socket, so a drop of the socket loses the turn. */
  sentOnSocket: boolean;
  startedAt: number;
  firstOutputAt?: number;
  abort?: AbortController;
  stopTimer?: number;
}

/** How long a cancelled socket turn may take to confirm before it is shown as stopped anyway. */
const STOP_GRACE_MS = 5000;
/** How long a first message waits for a socket that is still connecting before going over HTTP. */
const CONNECT_WAIT_MS = 3000;

let localIds = 0;
const localKey = (prefix: string) => `${prefix}-local-${++localIds}`;

function socketUrl(sessionId: string): string {
  const url = new URL(`/ws/playground/${encodeURIComponent(sessionId)}`, window.location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}

/**
 * The conversation of one session: its history, the turn in flight (streamed over the session's WebSocket, or
 * over HTTP when the socket is not up), and stopping it. Tokens are applied at most once per animation frame.
 */
export function useChat({ client, api, sessionId, onTurnEnd, onAuthLost }: UseChatOptions): Chat {
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [detail, setDetail] = useState<SessionDetail>();
  /** The history request that last answered, and its error if it failed. */
  const [loaded, setLoaded] = useState<{ generation: number; error: string | null } | null>(null);
  const [missing, setMissing] = useState(false);
  const [turn, setTurn] = useState<Turn | null>(null);
  const [connection, setConnection] = useState<SocketStatus>('connecting');
  const [generation, setGeneration] = useState(0);

  const socketRef = useRef<ChatSocket | null>(null);
  const activeRef = useRef<ActiveTurn | null>(null);
  const queueRef = useRef<ChatEvent[]>([]);
  const frameRef = useRef<number | undefined>(undefined);
  const statusWaitersRef = useRef(new Set<() => void>());
  const interruptedRef = useRef(false);
  const callbacksRef = useRef({ onTurnEnd, onAuthLost });
  useEffect(() => {
    callbacksRef.current = { onTurnEnd, onAuthLost };
  });

  const flush = useCallback(() => {
    if (frameRef.current !== undefined) {
      cancelAnimationFrame(frameRef.current);
      frameRef.current = undefined;
    }
    const active = activeRef.current;
    const events = queueRef.current;
    queueRef.current = [];
    if (!active || events.length === 0) return;
    if (active.firstOutputAt === undefined && events.some((e) => e.type === 'token' || e.type === 'tool_call')) {
      active.firstOutputAt = performance.now();
    }
    const firstOutputMs = active.firstOutputAt !== undefined ? active.firstOutputAt - active.startedAt : undefined;
    setMessages((current) =>
      current.map((m) =>
        m.key === active.key ? { ...m, parts: applyEvents(m.parts, events), timing: { firstOutputMs } } : m,
      ),
    );
  }, []);

  const finish = useCallback(
    (outcome: { status: MessageStatus; error?: string; usage?: Usage; messageId?: string }) => {
      const active = activeRef.current;
      if (!active) return;
      flush();
      window.clearTimeout(active.stopTimer);
      activeRef.current = null;
      const totalMs = performance.now() - active.startedAt;
      const firstOutputMs = active.firstOutputAt !== undefined ? active.firstOutputAt - active.startedAt : undefined;
      setMessages((current) =>
        current.map((m) => {
          if (m.key === active.userKey) return { ...m, pending: false };
          if (m.key !== active.key) return m;
          return {
            ...m,
            id: outcome.messageId ?? m.id,
            status: outcome.status,
            error: outcome.error,
            usage: outcome.usage,
            timing: { firstOutputMs, totalMs },
            pending: false,
          };
        }),
      );
      if (outcome.usage?.total_tokens) {
        const added = outcome.usage.total_tokens;
        setDetail((d) =>
          d ? { ...d, metadata: { ...d.metadata, total_tokens: (Number(d.metadata?.total_tokens) || 0) + added } } : d,
        );
      }
      setTurn(null);
      callbacksRef.current.onTurnEnd(outcome.usage);
    },
    [flush],
  );

  const handleEvent = useCallback(
    (event: ChatEvent) => {
      if (!activeRef.current) return;
      if (event.type === 'end') {
        finish({
          status: event.cancelled ? 'stopped' : 'done',
          usage: event.usage,
          messageId: event.message_id,
        });
      } else if (event.type === 'error') {
        finish({ status: 'failed', error: event.message });
      } else {
        queueRef.current.push(event);
        frameRef.current ??= requestAnimationFrame(() => {
          frameRef.current = undefined;
          flush();
        });
      }
    },
    [finish, flush],
  );

  // History.
  useEffect(() => {
    const controller = new AbortController();
    api.getSession(sessionId, controller.signal).then(
      (session) => {
        if (controller.signal.aborted) return;
        setDetail(session);
        const stored = (session.messages ?? []).map(fromStoredMessage);
        setMessages((current) => [...stored, ...unsaved(current, stored)]);
        setLoaded({ generation, error: null });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        if (error instanceof ApiError && error.status === 404) setMissing(true);
        setLoaded({ generation, error: describeError(error) });
      },
    );
    return () => controller.abort();
  }, [api, sessionId, generation]);

  // The socket.
  useEffect(() => {
    const waiters = statusWaitersRef.current;
    const socket = new ChatSocket({
      url: socketUrl(sessionId),
      getToken: () => client.socketToken(),
      renewCredentials: (refused) => client.renew(refused),
      onEvent: handleEvent,
      onStatus: (status) => {
        setConnection(status);
        for (const wake of waiters) wake();
        const active = activeRef.current;
        if (active?.sentOnSocket && status !== 'open') {
          interruptedRef.current = true;
          finish({
            status: 'failed',
            error: 'The connection dropped before the answer was complete. It reloads once the connection is back.',
          });
        } else if (status === 'open' && interruptedRef.current) {
          interruptedRef.current = false;
          setGeneration((n) => n + 1);
        }
      },
      onAuthLost: () => callbacksRef.current.onAuthLost(),
    });
    socketRef.current = socket;
    socket.start();
    return () => {
      socket.close();
      socketRef.current = null;
      const active = activeRef.current;
      activeRef.current = null;
      active?.abort?.abort();
      window.clearTimeout(active?.stopTimer);
      if (frameRef.current !== undefined) cancelAnimationFrame(frameRef.current);
      frameRef.current = undefined;
      queueRef.current = [];
      // A turn cut off here never finished: drop it rather than leave it "thinking".
      setMessages((current) => current.filter((m) => !m.pending));
      setTurn(null);
    };
  }, [client, sessionId, handleEvent, finish]);

  const waitForSocket = useCallback((socket: ChatSocket) => {
    if (socket.status !== 'connecting') return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiters = statusWaitersRef.current;
      const done = () => {
        window.clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = window.setTimeout(done, CONNECT_WAIT_MS);
      waiters.add(done);
    });
  }, []);

  const send = useCallback(
    (text: string): boolean => {
      if (activeRef.current) return false;
      const now = new Date().toISOString();
      const active: ActiveTurn = {
        key: localKey('assistant'),
        userKey: localKey('user'),
        via: 'socket',
        sentOnSocket: false,
        startedAt: performance.now(),
      };
      activeRef.current = active;
      setMessages((current) => [
        ...current,
        {
          key: active.userKey,
          role: 'user',
          timestamp: now,
          parts: [{ kind: 'text', text }],
          status: 'done',
          pending: true,
        },
        { key: active.key, role: 'assistant', timestamp: now, parts: [], status: 'streaming', pending: true },
      ]);
      setTurn({ via: 'socket', stopping: false });

      const start = async () => {
        const socket = socketRef.current;
        if (socket) await waitForSocket(socket);
        if (activeRef.current !== active) return;
        if (socket?.send({ type: 'chat', message: text })) {
          active.sentOnSocket = true;
          return;
        }

        active.via = 'http';
        active.abort = new AbortController();
        setTurn((t) => (t ? { ...t, via: 'http' } : t));
        try {
          await streamChatOverHttp(client, sessionId, text, active.abort.signal, handleEvent);
        } catch (error) {
          if (activeRef.current === active && !active.abort.signal.aborted) {
            finish({ status: 'failed', error: describeError(error) });
          }
        }
      };
      void start();
      return true;
    },
    [client, sessionId, handleEvent, finish, waitForSocket],
  );

  const stop = useCallback(() => {
    const active = activeRef.current;
    if (!active) return;
    setTurn((t) => (t ? { ...t, stopping: true } : t));
    const stopHere = () => {
      if (activeRef.current !== active) return;
      active.abort?.abort();
      finish({ status: 'stopped' });
    };
    // Asked to stop, the service ends the stream with `end` and what the answer used until then; leaving the
    // stream would stop the answer too, but lose that. Should the confirmation not come, it stops here anyway.
    if (active.sentOnSocket && socketRef.current?.send({ type: 'cancel' })) {
      active.stopTimer = window.setTimeout(stopHere, STOP_GRACE_MS);
    } else if (active.via === 'http' && active.abort) {
      api.cancelTurn(sessionId).catch(stopHere);
      active.stopTimer = window.setTimeout(stopHere, STOP_GRACE_MS);
    } else {
      stopHere();
    }
  }, [api, sessionId, finish]);

  const reload = useCallback(() => {
    setMissing(false);
    setGeneration((n) => n + 1);
  }, []);

  const fresh = loaded?.generation === generation;
  return {
    messages,
    detail,
    loading: !fresh,
    loadError: fresh ? loaded.error : null,
    missing,
    turn,
    connection,
    send,
    stop,
    reload,
  };
}

/**
 * The messages of the turn in flight that the history just read does not hold yet. A history read that started
 * before the turn may answer after the service stored its message (a message sent again right after an answer
 * ends, say): that message is shown once, as stored.
 */
function unsaved(current: ChatMessage[], stored: ChatMessage[]): ChatMessage[] {
  const lastAsked = stored.findLast((m) => m.role === 'user');
  return current.filter(
    (m) =>
      m.pending &&
      !(
        m.role === 'user' &&
        lastAsked !== undefined &&
        messageText(lastAsked) === messageText(m) &&
        Date.parse(lastAsked.timestamp) >= Date.parse(m.timestamp) - 5_000
      ),
  );
}
