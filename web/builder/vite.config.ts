import { webAppConfig } from '../vite.shared.js';

/** The service's builder listener for `vite` in development is BUILDER_PORT's. */
export default webAppConfig({ name: 'builder', serviceUrlEnv: 'BUILDER_URL', defaultPort: 8002 });
