import { Icon, WrenchIcon } from '../../../shared/ui/icons';

/* The builder's own glyphs; the ones both web apps use live in shared/ui/icons.tsx. */

export const BackIcon = () => (
  <Icon>
    <path d="M15 18 9 12l6-6" />
  </Icon>
);

export const UndoIcon = () => (
  <Icon>
    <path d="M9 14 4 9l5-5" />
    <path d="M4 9h10.5a5.5 5.5 0 0 1 0 11H11" />
  </Icon>
);

export const RedoIcon = () => (
  <Icon>
    <path d="m15 14 5-5-5-5" />
    <path d="M20 9H9.5a5.5 5.5 0 0 0 0 11H13" />
  </Icon>
);

export const SaveIcon = () => (
  <Icon>
    <path d="M19 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h11l5 5v11a2 2 0 0 1-2 2Z" />
    <path d="M17 21v-8H7v8M7 3v5h8" />
  </Icon>
);

export const DownloadIcon = () => (
  <Icon>
    <path d="M12 3v12M7 10l5 5 5-5M5 21h14" />
  </Icon>
);

export const UploadIcon = () => (
  <Icon>
    <path d="M12 21V9M7 14l5-5 5 5M5 3h14" />
  </Icon>
);

export const CopyIcon = () => (
  <Icon>
    <rect x="9" y="9" width="12" height="12" rx="2" />
    <path d="M5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1" />
  </Icon>
);

export const PlayIcon = () => (
  <Icon>
    <path d="M7 4v16l13-8Z" />
  </Icon>
);

export const CheckIcon = () => (
  <Icon>
    <path d="m5 12 5 5L20 7" />
  </Icon>
);

export const AlertIcon = () => (
  <Icon>
    <path d="M12 3 2 20h20Z" />
    <path d="M12 10v4M12 17.5v.01" />
  </Icon>
);

export const ErrorIcon = () => (
  <Icon>
    <circle cx="12" cy="12" r="9" />
    <path d="M12 7.5v5.5M12 16.5v.01" />
  </Icon>
);

export const HistoryIcon = () => (
  <Icon>
    <path d="M3 12a9 9 0 1 0 3-6.7L3 8" />
    <path d="M3 3v5h5M12 7v5l3 3" />
  </Icon>
);

export const CodeIcon = () => (
  <Icon>
    <path d="m8 7-5 5 5 5M16 7l5 5-5 5" />
  </Icon>
);

export const SlidersIcon = () => (
  <Icon>
    <path d="M4 6h10M18 6h2M4 12h4M12 12h8M4 18h12M20 18h0" />
    <circle cx="16" cy="6" r="2" />
    <circle cx="10" cy="12" r="2" />
    <circle cx="18" cy="18" r="2" />
  </Icon>
);

export const GlobeIcon = () => (
  <Icon>
    <circle cx="12" cy="12" r="9" />
    <path d="M3 12h18M12 3a14 14 0 0 1 0 18M12 3a14 14 0 0 0 0 18" />
  </Icon>
);

/** The workflow list: nodes joined into a flow. */
export const WorkflowsIcon = () => (
  <Icon>
    <rect x="3" y="4" width="7" height="6" rx="1.5" />
    <rect x="14" y="14" width="7" height="6" rx="1.5" />
    <path d="M10 7h3a2 2 0 0 1 2 2v5" />
  </Icon>
);

/** One glyph per node type, used on the palette, the canvas and the run timeline. */

export function NodeTypeIcon({ type }: { type: string }) {
  switch (type) {
    case 'start':
      return (
        <Icon>
          <circle cx="12" cy="12" r="8" />
          <path d="m10 8.5 5 3.5-5 3.5Z" />
        </Icon>
      );
    case 'agent':
      return (
        <Icon>
          <rect x="4" y="7" width="16" height="12" rx="3" />
          <path d="M12 3v4M9 12v1.5M15 12v1.5M9.5 16h5" />
        </Icon>
      );
    case 'router':
      return (
        <Icon>
          <path d="M4 12h5l4-6h7M13 18h7M9 12l4 6" />
          <path d="m17 3 3 3-3 3M17 15l3 3-3 3" />
        </Icon>
      );
    case 'tool':
      return <WrenchIcon />;
    case 'human':
      return (
        <Icon>
          <circle cx="12" cy="8" r="3.5" />
          <path d="M5 20a7 7 0 0 1 14 0" />
        </Icon>
      );
    case 'end':
      return (
        <Icon>
          <circle cx="12" cy="12" r="8" />
          <rect x="9" y="9" width="6" height="6" rx="1" />
        </Icon>
      );
    default:
      return (
        <Icon>
          <rect x="5" y="5" width="14" height="14" rx="3" />
        </Icon>
      );
  }
}
