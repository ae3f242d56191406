import { Icon } from '../../../shared/ui/icons';

/* The playground's own glyphs; the ones both web apps use live in shared/ui/icons.tsx. */

export const PencilIcon = () => (
  <Icon>
    <path d="M12 20h9" />
    <path d="M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4Z" />
  </Icon>
);

export const SendIcon = () => (
  <Icon>
    <path d="M22 2 11 13" />
    <path d="M22 2 15 22l-4-9-9-4Z" />
  </Icon>
);

export const MenuIcon = () => (
  <Icon>
    <path d="M4 6h16M4 12h16M4 18h16" />
  </Icon>
);

export const ActivityIcon = () => (
  <Icon>
    <path d="M3 12h4l3 8 4-16 3 8h4" />
  </Icon>
);
