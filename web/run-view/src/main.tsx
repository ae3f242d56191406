import { App } from '@modelcontextprotocol/ext-apps';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import '../../shared/ui/theme.css';
import '../../shared/ui/components.css';
import '../../builder/src/builder.css';
import './run-view.css';
import { RunViewApp } from './run-view';
import { HostSession } from './host-session';

const root = document.getElementById('root');
if (!root) throw new Error('The page has no #root element.');

const app = new App({ name: 'Agent Service workflow run', version: '1.0.0' }, {}, { autoResize: true });
const session = new HostSession(app);

createRoot(root).render(
  <StrictMode>
    <RunViewApp session={session} />
  </StrictMode>,
);

void session.start();
