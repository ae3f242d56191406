import { createServer } from 'node:http';
import express from 'express';
import { listenAndAnnounce } from './listen.js';

/** Baseline (b): express 5 with one "hello" JSON route (`GET /hello`), nothing else. */
const app = express();
app.get('/hello', (_req, res) => {
  res.json({ hello: 'world', service: 'express-hello' });
});
listenAndAnnounce(createServer(app));
