import type { CallToolResult, Tool } from '@modelcontextprotocol/client';
import { AppBridge, PostMessageTransport, type McpUiHostContext } from '@modelcontextprotocol/ext-apps/app-bridge';
import { useEffect, useRef, useState } from 'react';
import { useMediaQuery } from '../../../../shared/ui/use-media-query';

/** Until the view says how tall it is. */
const INITIAL_HEIGHT = 160;
const MIN_HEIGHT = 80;
/**
 * The view grows with what it shows, so that the conversation is the one thing that scrolls; beyond this (a view
 * that asks for ever more room) it scrolls inside its frame.
 */
const MAX_HEIGHT = 2000;
/** A view that has not said hello by then is not coming. */
const LOAD_TIMEOUT_MS = 15_000;
const DARK = '(prefers-color-scheme: dark)';

export interface McpAppFrameProps {
  /** The view's page, on this page's origin. */
  src: string;
  /** Names the frame for assistive technology: what the view shows. */
  title: string;
  /** The tool whose call the view shows, as the view reads it from its host context. */
  tool: Tool;
  hostVersion: string;
  /** The call's arguments, handed to the view once it is ready. */
  input: Record<string, unknown>;
  /** The call's result, once it came. */
  result?: { text: string; isError: boolean };
  /** The call ended without a result (the answer stopped before it returned). */
  cancelled?: boolean;
  /** How the view's own tool calls reach the server; a rejection is the view's protocol error. */
  callTool: (name: string, args: Record<string, unknown>) => Promise<CallToolResult>;
}

type Phase = 'opening' | 'open' | 'failed';

const clampHeight = (height: number) => Math.round(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, height)));
const ignore = () => undefined;

function hostContext(tool: Tool, dark: boolean): McpUiHostContext {
  return {
    theme: dark ? 'dark' : 'light',
    toolInfo: { tool },
    platform: 'web',
    displayMode: 'inline',
    availableDisplayModes: ['inline'],
    containerDimensions: { maxHeight: MAX_HEIGHT },
    locale: navigator.language,
  };
}

/**
 * An MCP App view (SEP-1865) of one tool call, hosted in a sandboxed frame of this origin: the host's side is the
 * SDK's `AppBridge` over `postMessage`. The view hears the call's arguments, then its result; its own tool calls go
 * through `callTool`; it is as tall as it asks to be, within bounds, and light or dark as the page is.
 */
export function McpAppFrame({ src, title, tool, hostVersion, input, result, cancelled, callTool }: McpAppFrameProps) {
  const frameRef = useRef<HTMLIFrameElement>(null);
  const dark = useMediaQuery(DARK);
  const [phase, setPhase] = useState<Phase>('opening');
  /** The bridge once the view has initialized: from then on it hears the call. */
  const [ready, setReady] = useState<AppBridge | null>(null);
  const [loadedSrc, setLoadedSrc] = useState<string>();
  const [height, setHeight] = useState(INITIAL_HEIGHT);

  // What the bridge's handlers read when they run, without making a new bridge (and reloading the view).
  const latest = useRef({ tool, dark, hostVersion, callTool });
  useEffect(() => {
    latest.current = { tool, dark, hostVersion, callTool };
  });

  // The bridge listens before the page loads (so that the view's first message is heard), then the page loads.
  useEffect(() => {
    const target = frameRef.current?.contentWindow;
    if (!target) return undefined;
    let closed = false;
    const { tool: initialTool, dark: initialDark, hostVersion: version } = latest.current;
    const bridge = new AppBridge(
      null,
      { name: 'Agent Service playground', version },
      { serverTools: {}, logging: {} },
      { hostContext: hostContext(initialTool, initialDark) },
    );
    const fail = () => {
      if (closed) return;
      closed = true;
      window.clearTimeout(timer);
      void bridge.close().catch(ignore);
      setReady(null);
      setPhase('failed');
    };
    const timer = window.setTimeout(fail, LOAD_TIMEOUT_MS);
    bridge.oncalltool = (params) => latest.current.callTool(params.name, params.arguments ?? {});
    bridge.onsizechange = ({ height: asked }) => {
      if (!closed && asked !== undefined && Number.isFinite(asked)) setHeight(clampHeight(asked));
    };
    bridge.oninitialized = () => {
      if (closed) return;
      window.clearTimeout(timer);
      setReady(bridge);
      setPhase('open');
    };
    bridge.connect(new PostMessageTransport(target, target)).then(() => {
      if (!closed) setLoadedSrc(src);
    }, fail);
    return () => {
      closed = true;
      window.clearTimeout(timer);
      setReady(null);
      void bridge.close().catch(ignore);
    };
  }, [src]);

  // The call, as it goes: its arguments once, then its result (or its end without one) once, in that order.
  const delivered = useRef<{ bridge: AppBridge | null; input: boolean; outcome: boolean; chain: Promise<void> }>({
    bridge: null,
    input: false,
    outcome: false,
    chain: Promise.resolve(),
  });
  useEffect(() => {
    if (!ready) return;
    if (delivered.current.bridge !== ready) {
      delivered.current = { bridge: ready, input: false, outcome: false, chain: Promise.resolve() };
    }
    const sent = delivered.current;
    const then = (send: () => Promise<void>) => {
      sent.chain = sent.chain.then(send).catch(ignore);
    };
    if (!sent.input) {
      sent.input = true;
      then(() => ready.sendToolInput({ arguments: input }));
    }
    if (!sent.outcome && result) {
      sent.outcome = true;
      then(() => ready.sendToolResult({ content: [{ type: 'text', text: result.text }], isError: result.isError }));
    } else if (!sent.outcome && cancelled) {
      sent.outcome = true;
      then(() => ready.sendToolCancelled({ reason: 'The answer stopped before the call returned.' }));
    }
  }, [ready, input, result, cancelled]);

  // Light or dark as the page is, now and when the system changes its mind.
  useEffect(() => {
    ready?.setHostContext(hostContext(latest.current.tool, dark));
  }, [ready, dark]);

  if (phase === 'failed') {
    return (
      <p className="app-view__note" role="status">
        The view of this call could not be shown; the call itself is above.
      </p>
    );
  }
  return (
    <div className="app-view" data-phase={phase}>
      {phase === 'opening' ? (
        <p className="app-view__note app-view__note--opening" role="status">
          <span className="spinner" aria-hidden="true" /> Opening the view…
        </p>
      ) : null}
      <iframe
        ref={frameRef}
        className="app-view__frame"
        title={title}
        sandbox="allow-scripts allow-forms"
        src={loadedSrc}
        height={height}
        referrerPolicy="no-referrer"
      />
    </div>
  );
}
