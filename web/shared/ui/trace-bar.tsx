import { formatDuration } from './format';

/** Bars shorter than this still show, so a 0 ms span is visible. */
const MIN_LENGTH = 0.006;

export interface TraceBarProps {
  /** Where the span starts, as a fraction (0..1) of the whole trace. */
  start: number;
  /** How long it lasts, as a fraction of the whole trace. */
  length: number;
  /** `error` stripes the bar; `open` marks a span still going on. */
  tone?: 'error' | 'open';
}

/**
 * One span of a trace as a bar on a track as long as the whole trace (the playground's waterfall, the builder's
 * run). It is drawn for the eye only: the row it sits in says the same in words. Its place is set through the
 * CSSOM, which the Content Security Policy allows.
 */
export function TraceBar({ start, length, tone }: TraceBarProps) {
  const width = Math.min(Math.max(length, MIN_LENGTH), 1);
  const left = Math.min(Math.max(start, 0), 1 - width);
  return (
    <span className="trace-bar" data-tone={tone} aria-hidden="true">
      <span className="trace-bar__fill" style={{ left: `${left * 100}%`, width: `${width * 100}%` }} />
    </span>
  );
}

/** The time axis over a trace's bars: its start, its middle and its end. */
export function TraceTicks({ durationMs }: { durationMs: number }) {
  return (
    <span className="trace-ticks" aria-hidden="true">
      <span>0</span>
      <span>{formatDuration(durationMs / 2)}</span>
      <span>{formatDuration(durationMs)}</span>
    </span>
  );
}
