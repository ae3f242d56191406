import { toChatEvent, type ChatEvent } from './chat-events';

/**
 * - connecting: opening or authenticating, for the first time or again after a drop
 * - open: authenticated; turns go over the socket
 * - unavailable: no WebSocket here, no token to send, or it never opened; turns go over HTTP
 * - closed: closed for good (signed out or the page moved on)
 */
export type SocketStatus = 'connecting' | 'open' | 'unavailable' | 'closed';

export interface ChatSocketOptions {
  url: string;
  /** The token for the `auth` message; undefined when there is none to give (then HTTP is used). */
  getToken: () => Promise<string | undefined>;
  /** Renews the credentials behind a refused token; true when worth trying again. */
  renewCredentials: (refusedToken: string) => Promise<boolean>;
  onEvent: (event: ChatEvent) => void;
  onStatus: (status: SocketStatus) => void;
  /** The service refused the credentials even after a renewal. */
  onAuthLost: (message: string) => void;
}

/** RFC 6455 "policy violation", which the service uses to refuse credentials. */
const POLICY_VIOLATION = 1008;
const PING_EVERY_MS = 25_000;
const SILENCE_LIMIT_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;
/** Failed opens in a row, before ever opening, after which turns go over HTTP while retrying goes on. */
const FAILURES_BEFORE_FALLBACK = 2;

/**
 * The playground socket of one session: authenticates with the first message, answers pings, sends its own
 * (a dead connection is noticed within ~35 s), and reconnects with exponential backoff after a drop.
 */
export class ChatSocket {
  readonly #options: ChatSocketOptions;
  #socket: WebSocket | null = null;
  #status: SocketStatus = 'connecting';
  #stopped = false;
  #failures = 0;
  #renewed = false;
  #authRefused: string | null = null;
  #sentToken = '';
  #retryTimer: number | undefined;
  #pingTimer: number | undefined;
  #lastHeard = 0;

  constructor(options: ChatSocketOptions) {
    this.#options = options;
  }

  get status(): SocketStatus {
    return this.#status;
  }

  start(): void {
    if (typeof WebSocket === 'undefined') {
      this.#setStatus('unavailable');
      return;
    }
    void this.#connect();
  }

  /** Sends a message when authenticated; false otherwise (the caller falls back to HTTP). */
  send(message: { type: 'chat'; message: string } | { type: 'cancel' }): boolean {
    if (this.#status !== 'open' || this.#socket?.readyState !== WebSocket.OPEN) return false;
    this.#socket.send(JSON.stringify(message));
    return true;
  }

  /** Closes for good. The owner asked, so no status is reported. */
  close(): void {
    this.#stopped = true;
    window.clearTimeout(this.#retryTimer);
    window.clearInterval(this.#pingTimer);
    const socket = this.#socket;
    this.#socket = null;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000, 'closed by the page');
    this.#status = 'closed';
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    if (this.#status !== 'unavailable') this.#setStatus('connecting');
    let token: string | undefined;
    try {
      token = await this.#options.getToken();
    } catch {
      token = undefined;
    }
    if (this.#stopped) return;
    if (token === undefined) {
      this.#setStatus('unavailable');
      return;
    }

    let socket: WebSocket;
    try {
      socket = new WebSocket(this.#options.url);
    } catch {
      this.#setStatus('unavailable');
      return;
    }
    this.#socket = socket;
    this.#authRefused = null;
    let authenticated = false;

    socket.onopen = () => {
      this.#lastHeard = Date.now();
      this.#sentToken = token;
      socket.send(JSON.stringify({ type: 'auth', token }));
    };

    socket.onmessage = (message: MessageEvent) => {
      if (socket !== this.#socket) return;
      this.#lastHeard = Date.now();
      let data: Record<string, unknown>;
      try {
        const parsed = JSON.parse(String(message.data)) as unknown;
        if (typeof parsed !== 'object' || parsed === null) return;
        data = parsed as Record<string, unknown>;
      } catch {
        return;
      }
      const type = typeof data.type === 'string' ? data.type : '';
      switch (type) {
        case 'auth_success':
          authenticated = true;
          this.#failures = 0;
          this.#renewed = false;
          this.#startPings(socket);
          this.#setStatus('open');
          return;
        case 'auth_error':
          this.#authRefused = typeof data.message === 'string' ? data.message : 'Authentication failed.';
          return;
        case 'ping':
          socket.send(JSON.stringify({ type: 'pong' }));
          return;
        case 'pong':
          return;
        default: {
          const event = toChatEvent(type, data);
          if (event) this.#options.onEvent(event);
        }
      }
    };

    socket.onclose = (close: CloseEvent) => {
      if (socket !== this.#socket) return;
      this.#socket = null;
      window.clearInterval(this.#pingTimer);
      if (this.#stopped) return;
      const refused = this.#authRefused ?? (close.code === POLICY_VIOLATION ? close.reason || 'Not authorised.' : null);
      if (refused !== null) {
        void this.#onRefused(refused);
        return;
      }
      if (!authenticated) this.#failures += 1;
      const fallback = !authenticated && this.#failures >= FAILURES_BEFORE_FALLBACK;
      this.#setStatus(fallback || this.#status === 'unavailable' ? 'unavailable' : 'connecting');
      this.#scheduleReconnect();
    };
  }

  async #onRefused(message: string): Promise<void> {
    if (!this.#renewed && (await this.#options.renewCredentials(this.#sentToken).catch(() => false))) {
      this.#renewed = true;
      void this.#connect();
      return;
    }
    this.#stopped = true;
    this.#setStatus('closed');
    this.#options.onAuthLost(message);
  }

  #scheduleReconnect(): void {
    const attempt = Math.max(this.#failures, 1);
    const base = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (attempt - 1));
    const delay = base / 2 + Math.random() * (base / 2);
    window.clearTimeout(this.#retryTimer);
    this.#retryTimer = window.setTimeout(() => void this.#connect(), delay);
  }

  #startPings(socket: WebSocket): void {
    window.clearInterval(this.#pingTimer);
    this.#pingTimer = window.setInterval(() => {
      if (socket.readyState !== WebSocket.OPEN) return;
      if (Date.now() - this.#lastHeard > PING_EVERY_MS + SILENCE_LIMIT_MS) {
        // Nothing heard, not even a pong: the connection is dead without knowing it.
        socket.close(4000, 'no answer to ping');
        return;
      }
      socket.send(JSON.stringify({ type: 'ping' }));
    }, PING_EVERY_MS);
  }

  #setStatus(status: SocketStatus): void {
    if (this.#status === status) return;
    this.#status = status;
    this.#options.onStatus(status);
  }
}
