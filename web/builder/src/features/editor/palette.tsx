import { useId, type DragEvent } from 'react';
import type { NodeType } from '../../api/builder-api';
import { NodeTypeIcon } from '../../ui/icons';
import { DRAG_MIME, NODE_KINDS } from './node-catalog';

export interface PaletteProps {
  /** Adds a node of the type in the middle of what the canvas shows (click, Enter or Space). */
  onAdd: (type: NodeType) => void;
}

function startDrag(event: DragEvent<HTMLButtonElement>, type: NodeType) {
  event.dataTransfer.setData(DRAG_MIME, type);
  event.dataTransfer.setData('text/plain', type);
  event.dataTransfer.effectAllowed = 'copy';
}

/** The node types, to drag onto the canvas or to add with the keyboard. */
export function Palette({ onAdd }: PaletteProps) {
  const headingId = useId();
  const hintId = useId();
  return (
    <aside className="palette" aria-labelledby={headingId}>
      <h2 id={headingId} className="panel-heading">
        Nodes
      </h2>
      <p id={hintId} className="palette__hint">
        Drag onto the canvas, or press Enter to add one in the middle.
      </p>
      <ul className="palette__list">
        {NODE_KINDS.map((kind) => (
          <li key={kind.type}>
            <button
              type="button"
              className="palette__item"
              data-type={kind.type}
              draggable
              aria-label={`Add ${kind.title} node`}
              aria-describedby={hintId}
              title={kind.hint}
              onDragStart={(event) => startDrag(event, kind.type)}
              onClick={() => onAdd(kind.type)}
            >
              <span className="palette__icon">
                <NodeTypeIcon type={kind.type} />
              </span>
              <span className="palette__text">
                <span className="palette__name">{kind.title}</span>
                <span className="palette__desc">{kind.hint}</span>
              </span>
            </button>
          </li>
        ))}
      </ul>
    </aside>
  );
}
