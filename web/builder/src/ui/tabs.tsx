import { useRef, type KeyboardEvent, type ReactNode } from 'react';

export interface TabItem<T extends string> {
  id: T;
  label: ReactNode;
  /** The accessible name when the label is not plain text (an icon with a count). */
  name?: string;
}

export interface TabsProps<T extends string> {
  items: readonly TabItem<T>[];
  value: T;
  onChange: (id: T) => void;
  /** Names the tab list for screen readers. */
  label: string;
  /** Prefix of the tab and panel ids, so the panel can point back with aria-labelledby. */
  idBase: string;
  className?: string;
}

/** The tab and panel ids a `Tabs` with this id base gives its tab `id`. */
export const tabIds = (idBase: string, id: string) => ({ tab: `${idBase}-${id}-tab`, panel: `${idBase}-${id}-panel` });

/**
 * A WAI-ARIA tab list: one tab stop, arrow keys, Home and End move between tabs and select them. The panel is the
 * caller's, labelled with `tabIds(idBase, value).tab`.
 */
export function Tabs<T extends string>({ items, value, onChange, label, idBase, className }: TabsProps<T>) {
  const refs = useRef(new Map<T, HTMLButtonElement>());

  function onKeyDown(event: KeyboardEvent<HTMLButtonElement>) {
    const index = items.findIndex((t) => t.id === value);
    let next: number | undefined;
    if (event.key === 'ArrowRight') next = (index + 1) % items.length;
    else if (event.key === 'ArrowLeft') next = (index - 1 + items.length) % items.length;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = items.length - 1;
    const id = next === undefined ? undefined : items[next]?.id;
    if (id === undefined) return;
    event.preventDefault();
    onChange(id);
    refs.current.get(id)?.focus();
  }

  return (
    <div className={className ? `tabs ${className}` : 'tabs'} role="tablist" aria-label={label}>
      {items.map((t) => {
        const ids = tabIds(idBase, t.id);
        return (
          <button
            key={t.id}
            ref={(el) => {
              if (el) refs.current.set(t.id, el);
              else refs.current.delete(t.id);
            }}
            type="button"
            role="tab"
            id={ids.tab}
            className="tabs__tab"
            aria-selected={t.id === value}
            aria-controls={ids.panel}
            aria-label={t.name}
            tabIndex={t.id === value ? 0 : -1}
            onClick={() => onChange(t.id)}
            onKeyDown={onKeyDown}
          >
            {t.label}
          </button>
        );
      })}
    </div>
  );
}
