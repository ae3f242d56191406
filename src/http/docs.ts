import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import express, { type Router } from 'express';

const require = createRequire(import.meta.url);
const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const REDOC_DIR = dirname(require.resolve('redoc/package.json'));

// Relative URLs keep the pages working behind a reverse proxy that mounts the service under a prefix.
const SWAGGER_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Agent Service API</title>
  <link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/assets/swagger-ui-bundle.js"></script>
  <script src="docs/init.js"></script>
</body>
</html>
`;

const SWAGGER_INIT = `window.ui = SwaggerUIBundle({
  url: new URL('openapi.json', document.baseURI).href,
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: true,
});
`;

const REDOC_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Agent Service API reference</title>
  <style>body { margin: 0; padding: 0; }</style>
</head>
<body>
  <redoc spec-url="openapi.json"></redoc>
  <script src="redoc/assets/redoc.standalone.js"></script>
</body>
</html>
`;

/**
 * `/openapi.json`, Swagger UI at `/docs` and Redoc at `/redoc`. Every asset comes from installed npm packages,
 * so the pages render with no network access.
 */
export function docsRoutes(document: () => unknown): Router {
  const router = express.Router();
  const html = (page: string) => (_req: express.Request, res: express.Response) => {
    res.type('html').set('Cache-Control', 'no-cache').send(page);
  };
  router.get('/openapi.json', (_req, res) => {
    res.json(document());
  });
  router.get('/docs', html(SWAGGER_PAGE));
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(SWAGGER_INIT);
  });
  router.use('/docs/assets', express.static(SWAGGER_DIR, { index: false, maxAge: '1d' }));
  router.get('/redoc', html(REDOC_PAGE));
  router.use('/redoc/assets', express.static(`${REDOC_DIR}/bundles`, { index: false, maxAge: '1d' }));
  return router;
}
