import { useId, useState, type KeyboardEvent } from 'react';
import { CloseIcon } from '../../../../shared/ui/icons';

const MAX_TAGS = 20;
const MAX_TAG_LENGTH = 50;

/** Tags as chips: Enter or a comma adds what was typed, Backspace in the empty box removes the last one. */
export function TagInput({ tags, onChange }: { tags: string[]; onChange: (tags: string[]) => void }) {
  const [text, setText] = useState('');
  const id = useId();

  function add(raw: string) {
    const fresh = raw
      .split(',')
      .map((t) => t.trim().slice(0, MAX_TAG_LENGTH))
      .filter((t) => t && !tags.includes(t));
    if (fresh.length) onChange([...tags, ...new Set(fresh)].slice(0, MAX_TAGS));
    setText('');
  }

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key === 'Enter' || event.key === ',') {
      event.preventDefault();
      if (text.trim()) add(text);
    } else if (event.key === 'Backspace' && text === '' && tags.length > 0) {
      event.preventDefault();
      onChange(tags.slice(0, -1));
    }
  }

  return (
    <div className="field">
      <label htmlFor={id}>Tags</label>
      <div className="tag-input">
        {tags.map((t) => (
          <span key={t} className="tag">
            {t}
            <button
              type="button"
              className="tag__remove"
              aria-label={`Remove tag ${t}`}
              onClick={() => onChange(tags.filter((x) => x !== t))}
            >
              <CloseIcon />
            </button>
          </span>
        ))}
        <input
          id={id}
          className="tag-input__box"
          value={text}
          placeholder={tags.length ? '' : 'Add a tag, then Enter'}
          maxLength={MAX_TAG_LENGTH}
          disabled={tags.length >= MAX_TAGS}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          onBlur={() => {
            if (text.trim()) add(text);
          }}
        />
      </div>
    </div>
  );
}
