import { useCallback, useEffect, useRef, useState, type KeyboardEvent, type PointerEvent, type RefObject } from 'react';

/** How far one arrow key moves the splitter; Shift moves it further. */
const STEP_PX = 16;
const BIG_STEP_PX = 64;

export interface PanelWidth {
  /** The width the person chose, or null for the stylesheet's default. */
  width: number | null;
  min: number;
  /** The widest it may be now: what leaves the rest of the screen its minimum. */
  max: number;
  set: (width: number | null) => void;
}

function stored(key: string): number | null {
  try {
    const value = Number(window.localStorage.getItem(key));
    return Number.isFinite(value) && value > 0 ? value : null;
  } catch {
    return null; // storage may be off (a private window with a strict policy): the default width serves
  }
}

function store(key: string, width: number | null): void {
  try {
    if (width === null) window.localStorage.removeItem(key);
    else window.localStorage.setItem(key, String(Math.round(width)));
  } catch {
    // Not remembered then; the width still applies until the page goes.
  }
}

/**
 * The width of a side panel the person may change, remembered in localStorage under `key`. `max` follows the
 * window: `others` is what the rest of the row needs at least.
 */
export function usePanelWidth(key: string, { min, max, others }: { min: number; max: number; others: number }) {
  const [chosen, setChosen] = useState<number | null>(() => stored(key));
  const [room, setRoom] = useState(() => window.innerWidth - others);

  useEffect(() => {
    const onResize = () => setRoom(window.innerWidth - others);
    window.addEventListener('resize', onResize);
    return () => window.removeEventListener('resize', onResize);
  }, [others]);

  const upper = Math.max(min, Math.min(max, room));
  const set = useCallback(
    (width: number | null) => {
      const next = width === null ? null : Math.round(Math.min(Math.max(width, min), Math.max(min, max)));
      setChosen(next);
      store(key, next);
    },
    [key, max, min],
  );
  const width = chosen === null ? null : Math.min(Math.max(chosen, min), upper);
  return { width, min, max: upper, set } satisfies PanelWidth;
}

export interface PanelResizerProps {
  /** What the splitter resizes, for screen readers: "Resize the side panel". */
  label: string;
  /** The id of the panel it resizes. */
  controls: string;
  /** The panel, to measure while it still has its default width. */
  panelRef: RefObject<HTMLElement | null>;
  panel: PanelWidth;
}

/**
 * A WAI-ARIA window splitter on the left edge of a panel on the right: drag it, or focus it and use the arrow keys
 * (Shift for bigger steps), Home and End for the narrowest and widest; a double click, or Enter, goes back to the
 * default width.
 */
export function PanelResizer({ label, controls, panelRef, panel }: PanelResizerProps) {
  const drag = useRef<{ x: number; width: number } | null>(null);
  const [measured, setMeasured] = useState<number | null>(null);
  const { width, min, max, set } = panel;

  useEffect(() => {
    const element = panelRef.current;
    if (!element) return undefined;
    const observer = new ResizeObserver(() => setMeasured(Math.round(element.getBoundingClientRect().width)));
    observer.observe(element);
    return () => observer.disconnect();
  }, [panelRef]);

  const current = width ?? measured ?? min;
  const now = Math.min(Math.max(current, min), max);

  function onPointerDown(event: PointerEvent<HTMLDivElement>) {
    if (event.button !== 0) return;
    event.preventDefault();
    event.currentTarget.setPointerCapture(event.pointerId);
    event.currentTarget.focus();
    drag.current = { x: event.clientX, width: panelRef.current?.getBoundingClientRect().width ?? now };
  }

  function onPointerMove(event: PointerEvent<HTMLDivElement>) {
    const start = drag.current;
    if (!start) return;
    // The panel is on the right: moving the splitter left widens it.
    set(start.width + (start.x - event.clientX));
  }

  function onPointerUp(event: PointerEvent<HTMLDivElement>) {
    drag.current = null;
    if (event.currentTarget.hasPointerCapture(event.pointerId)) {
      event.currentTarget.releasePointerCapture(event.pointerId);
    }
  }

  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const step = event.shiftKey ? BIG_STEP_PX : STEP_PX;
    let next: number | null | undefined;
    if (event.key === 'ArrowLeft') next = now + step;
    else if (event.key === 'ArrowRight') next = now - step;
    else if (event.key === 'Home') next = min;
    else if (event.key === 'End') next = max;
    else if (event.key === 'Enter') next = null;
    if (next === undefined) return;
    event.preventDefault();
    set(next === null ? null : Math.min(Math.max(next, min), max));
  }

  return (
    <div
      className="panel-resizer"
      role="separator"
      aria-orientation="vertical"
      aria-label={label}
      aria-controls={controls}
      aria-valuemin={min}
      aria-valuemax={max}
      aria-valuenow={now}
      aria-valuetext={`${now} pixels wide`}
      tabIndex={0}
      title="Drag, or use the arrow keys, to resize. Double-click for the default width."
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={onPointerUp}
      onPointerCancel={onPointerUp}
      onKeyDown={onKeyDown}
      onDoubleClick={() => set(null)}
    />
  );
}
