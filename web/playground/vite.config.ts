import { webAppConfig } from '../vite.shared.js';

/**
 * The service's playground listener for `vite` in development is PLAYGROUND_PORT's; the chat streams over /ws, and
 * the views of tool calls are its pages under /views.
 */
export default webAppConfig({
  name: 'playground',
  serviceUrlEnv: 'PLAYGROUND_URL',
  defaultPort: 8001,
  webSocket: true,
  servicePaths: ['/views'],
});
