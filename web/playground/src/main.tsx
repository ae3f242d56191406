import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiClient } from '../../shared/api/api-client';
import '../../shared/ui/theme.css';
import '../../shared/ui/components.css';
import { App } from './app';
import './playground.css';

const root = document.getElementById('root');
if (!root) throw new Error('The page has no #root element.');

const client = new ApiClient({ storageKey: 'agent-service.playground.credentials' });

createRoot(root).render(
  <StrictMode>
    <App client={client} />
  </StrictMode>,
);
