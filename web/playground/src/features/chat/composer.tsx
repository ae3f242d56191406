import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { StopIcon } from '../../../../shared/ui/icons';
import { SendIcon } from '../../ui/icons';

export interface ComposerProps {
  /** A turn is running: the Send button becomes Stop. */
  running: boolean;
  stopping: boolean;
  disabled?: boolean;
  /** Focus the box when it appears (a session was just created to type in). */
  autoFocus?: boolean;
  placeholder?: string;
  onSend: (text: string) => void;
  onStop: () => void;
}

const MAX_ROWS_HEIGHT = 220;

/** The message box: Enter sends, Shift+Enter starts a new line. */
export function Composer({
  running,
  stopping,
  disabled = false,
  autoFocus = false,
  placeholder,
  onSend,
  onStop,
}: ComposerProps) {
  const [text, setText] = useState('');
  const textareaRef = useRef<HTMLTextAreaElement>(null);
  const hintId = useId();
  const inputId = useId();

  // Grow with the text up to a limit, then scroll.
  useEffect(() => {
    const textarea = textareaRef.current;
    if (!textarea) return;
    textarea.style.height = 'auto';
    textarea.style.height = `${Math.min(textarea.scrollHeight, MAX_ROWS_HEIGHT)}px`;
  }, [text]);

  // Back to the box when a turn ends, ready for the next message.
  const wasRunning = useRef(running);
  useEffect(() => {
    if (wasRunning.current && !running) textareaRef.current?.focus({ preventScroll: true });
    wasRunning.current = running;
  }, [running]);

  const canSend = !running && !disabled && text.trim().length > 0;

  function submit() {
    if (!canSend) return;
    onSend(text.trim());
    setText('');
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      submit();
    } else if (event.key === 'Escape' && running) {
      event.preventDefault();
      onStop();
    }
  }

  return (
    <form
      className="composer"
      onSubmit={(event) => {
        event.preventDefault();
        submit();
      }}
    >
      <label htmlFor={inputId} className="visually-hidden">
        Message
      </label>
      <textarea
        ref={textareaRef}
        id={inputId}
        className="composer__input"
        rows={1}
        value={text}
        placeholder={placeholder ?? 'Send a message'}
        disabled={disabled}
        autoFocus={autoFocus}
        aria-describedby={hintId}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
      />
      <div className="composer__bar">
        <p id={hintId} className="composer__hint">
          <kbd>Enter</kbd> to send, <kbd>Shift</kbd>+<kbd>Enter</kbd> for a new line
          {running ? (
            <>
              , <kbd>Esc</kbd> to stop
            </>
          ) : null}
        </p>
        {/* One element for both roles, so focus stays on it when Send turns into Stop. */}
        <button
          type={running ? 'button' : 'submit'}
          className={`button composer__button ${running ? 'button--danger' : 'button--primary'}`}
          onClick={running ? onStop : undefined}
          disabled={running ? stopping : !canSend}
        >
          {running ? <StopIcon /> : <SendIcon />}
          {running ? (stopping ? 'Stopping…' : 'Stop') : 'Send'}
        </button>
      </div>
    </form>
  );
}
