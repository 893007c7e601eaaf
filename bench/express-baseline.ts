/**
 * Standalone on purpose: it copies the service's SQL and error codes, so a change there does not move it.
 *
 * A yardstick: listPets, createPet and getPet in stock Express 5 + pg, as anyone would write them
 * (express.json(), hand-written checks), with the service's auth, rules, SQL, error bodies and
 * contract headers (nosniff, no-store, no ETag, Sunset/Deprecation, Location, Link) from
 * baseline-common.ts. What it does not have: the service's request log line, metrics and
 * request id. Env: PORT, HOST, DATABASE_URL, API_KEYS, CURSOR_SECRET.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import {
  authenticate,
  BODY_LIMIT_BYTES,
  closePool,
  createPet,
  DEPRECATION_HEADERS,
  errorAnswer,
  getPet,
  HttpError,
  listPets,
  requireJsonBody,
} from './baseline-common.js';

const app = express();
app.disable('x-powered-by');
app.set('etag', false); // as the service: answers are no-store, a validator would only invite 304s
app.use((_request, response, next) => {
  response.setHeader('X-Content-Type-Options', 'nosniff');
  next();
});
app.use('/v1', (_request, response, next) => {
  response.setHeader('Cache-Control', 'no-store');
  next();
});
app.get('/healthz', (_request, response) => void response.json({ status: 'ok' }));
app.get('/v1/pets', checkKey, async (request, response) => {
  const page = await listPets(request.query);
  if (page.link !== undefined) response.setHeader('Link', page.link);
  response.json(page.pets);
});
// Parsed after authentication, as in the service: a caller without a key learns nothing about its body.
app.post(
  '/v1/pets',
  checkKey,
  checkJsonBody,
  express.json({ limit: BODY_LIMIT_BYTES, strict: false, type: () => true }),
  async (request, response) => {
    const pet = await createPet(request.body);
    response.status(201).location(`/v1/pets/${pet.id}`).json(pet);
  },
);
app.get(
  '/v1/pets/:petId',
  (_request, response, next) => {
    response.set(DEPRECATION_HEADERS);
    next();
  },
  checkKey,
  async (request, response) => void response.json(await getPet(String(request.params.petId))),
);
app.all('/v1/pets', checkKey, () => {
  throw new HttpError(405, 'Method not allowed on /v1/pets: use GET or POST', { Allow: 'GET, POST' });
});
app.all('/v1/pets/:petId', checkKey, () => {
  throw new HttpError(405, 'Method not allowed on /v1/pets/{petId}: use GET', { Allow: 'GET' });
});
app.use(() => {
  throw new HttpError(404, 'No such route');
});
app.use((error: unknown, _request: Request, response: Response, next: NextFunction) => {
  // An answer already under way cannot get an error body: Express's own handler ends the connection.
  if (response.headersSent) return next(error);
  const answer = errorAnswer(error);
  response.status(answer.status).set(answer.headers).json(answer.body);
});

const server = app.listen(Number(process.env.PORT ?? 3001), process.env.HOST ?? '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => server.close(() => void closePool().finally(() => process.exit(0))));
}

function checkKey(request: Request, _response: Response, next: NextFunction): void {
  authenticate(request.headers.authorization);
  next();
}

function checkJsonBody(request: Request, _response: Response, next: NextFunction): void {
  requireJsonBody(request.headers);
  next();
}
