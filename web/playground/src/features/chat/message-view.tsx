import { Fragment, memo } from 'react';
import { formatDateTime, formatDuration, formatMoment, formatNumber } from '../../../../shared/ui/format';
import { ToolAppView } from '../app-views/tool-app-view';
import type { ChatMessage } from './chat-model';
import { Markdown } from './markdown';
import { ToolCallView } from './tool-call';
import { ToolNeedsCard } from './tool-needs';

function Meta({ message }: { message: ChatMessage }) {
  const items: string[] = [];
  const { timing, usage } = message;
  if (timing?.firstOutputMs !== undefined && message.status !== 'streaming') {
    items.push(`first output ${formatDuration(timing.firstOutputMs)}`);
  }
  if (timing?.totalMs !== undefined) items.push(`total ${formatDuration(timing.totalMs)}`);
  if (usage?.total_tokens !== undefined) {
    const detail =
      usage.prompt_tokens !== undefined && usage.completion_tokens !== undefined
        ? ` (${formatNumber(usage.prompt_tokens)} in / ${formatNumber(usage.completion_tokens)} out)`
        : '';
    items.push(`${formatNumber(usage.total_tokens)} tokens${detail}`);
  }
  return (
    <p className="message__meta">
      <time dateTime={message.timestamp} title={formatDateTime(message.timestamp)}>
        {formatMoment(message.timestamp)}
      </time>
      {items.map((item) => ` · ${item}`).join('')}
    </p>
  );
}

/**
 * One message of the conversation; an assistant answer shows its text and tool calls in order, each call with its
 * view under it when its tool has one.
 */
export const MessageView = memo(function MessageView({ message }: { message: ChatMessage }) {
  const streaming = message.status === 'streaming';
  const empty = message.parts.length === 0;

  if (message.role === 'user') {
    const text = message.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
    return (
      <article className="message message--user" aria-label="You">
        <div className="message__bubble">{text}</div>
        <Meta message={message} />
      </article>
    );
  }

  return (
    <article className="message message--assistant" aria-label="Assistant" aria-busy={streaming}>
      <div className={streaming && !empty ? 'message__content message__content--streaming' : 'message__content'}>
        {message.parts.map((part, index) =>
          part.kind === 'text' ? (
            <Markdown key={index} text={part.text} />
          ) : (
            <Fragment key={part.id}>
              <ToolCallView call={part} interrupted={!streaming} />
              <ToolAppView call={part} interrupted={!streaming} />
              {part.needs ? <ToolNeedsCard needs={part.needs} messageKey={message.key} callId={part.id} /> : null}
            </Fragment>
          ),
        )}
        {streaming && empty ? (
          <p className="message__thinking">
            <span className="typing" aria-hidden="true">
              <span />
              <span />
              <span />
            </span>
            Thinking…
          </p>
        ) : null}
        {!streaming && empty && message.status === 'done' ? <p className="message__empty">(no text)</p> : null}
      </div>
      {message.status === 'stopped' ? (
        <p className="message__flag">
          <span className="badge badge--warning">Stopped</span>
          <span>The answer was stopped before it finished.</span>
        </p>
      ) : null}
      {message.status === 'failed' ? (
        <p className="message__flag" role="alert">
          <span className="badge badge--danger">Error</span>
          <span>{message.error ?? 'The answer failed.'}</span>
        </p>
      ) : null}
      <Meta message={message} />
    </article>
  );
});
