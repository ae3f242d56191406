import { useEffect, useId, useRef, type ReactNode } from 'react';
import { CloseIcon } from '../../../shared/ui/icons';

export interface ModalProps {
  title: ReactNode;
  onClose: () => void;
  children: ReactNode;
  /** Buttons at the bottom right. */
  actions?: ReactNode;
  /** Wide enough for two columns side by side (diffs, a canvas preview). */
  wide?: boolean;
}

/**
 * A modal on the native <dialog>: the browser keeps focus inside and closes it on Escape; focus returns to the
 * control that opened it. Mount it to open it, unmount it to close it.
 */
export function Modal({ title, onClose, children, actions, wide = false }: ModalProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return undefined;
    const previous = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    return () => {
      if (dialog.open) dialog.close();
      if (previous?.isConnected) previous.focus();
    };
  }, []);

  return (
    <dialog
      ref={ref}
      className={wide ? 'dialog modal modal--wide' : 'dialog modal'}
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <div className="modal__top">
        <h2 id={titleId} className="dialog__title modal__title">
          {title}
        </h2>
        <button type="button" className="icon-button" aria-label="Close" title="Close" onClick={onClose}>
          <CloseIcon />
        </button>
      </div>
      <div className="modal__body">{children}</div>
      {actions ? <div className="dialog__actions modal__actions">{actions}</div> : null}
    </dialog>
  );
}
