/**
 * Standalone on purpose: it copies the service's SQL and error codes, so a change there does not move it.
 *
 * A yardstick for the framework alone: the same work as express-baseline.ts (auth, rules, SQL,
 * error bodies and contract headers from baseline-common.ts), written as the smallest NestJS app
 * on Express would be: one controller, a guard, an exception filter, Nest's JSON body parser (a
 * middleware, so it parses before the guard authenticates, unlike the Express baseline; every
 * body the bench sends carries a valid key, so the work per request is the same). No
 * request log, metrics, request id, ValidationPipe or TypeORM. Ours / this shows what the
 * service's own features cost; this / Express shows what Nest's routing, guards and exception
 * handling cost. Env: PORT, HOST, DATABASE_URL, API_KEYS, CURSOR_SECRET.
 */
import 'reflect-metadata';
import {
  All,
  type ArgumentsHost,
  Body,
  type CanActivate,
  Catch,
  Controller,
  type ExecutionContext,
  Get,
  Header,
  HttpCode,
  HttpException,
  Module,
  Param,
  Post,
  Query,
  Res,
  type ExceptionFilter,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
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

class KeyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    if (request.path === '/healthz') return true;
    authenticate(request.headers.authorization);
    if (request.method === 'POST') requireJsonBody(request.headers);
    return true;
  }
}

@Catch()
class ErrorBodyFilter implements ExceptionFilter {
  catch(error: unknown, host: ArgumentsHost): void {
    // Nest's own (an unknown route's 404) carry their status as HttpException.
    const answer = errorAnswer(
      error instanceof HttpException ? new HttpError(error.getStatus(), error.message) : error,
    );
    host.switchToHttp().getResponse<Response>().status(answer.status).set(answer.headers).json(answer.body);
  }
}

@Controller()
class HealthController {
  @Get('healthz')
  health() {
    return { status: 'ok' };
  }
}

@Controller('v1/pets')
class PetsController {
  @Get()
  async list(@Query() query: Record<string, unknown>, @Res({ passthrough: true }) response: Response) {
    const page = await listPets(query);
    if (page.link !== undefined) response.setHeader('Link', page.link);
    return page.pets;
  }

  @Post()
  @HttpCode(201)
  async create(@Body() body: unknown, @Res({ passthrough: true }) response: Response) {
    const pet = await createPet(body);
    response.location(`/v1/pets/${pet.id}`);
    return pet;
  }

  @Get(':petId')
  @Header('Sunset', DEPRECATION_HEADERS.Sunset)
  @Header('Deprecation', DEPRECATION_HEADERS.Deprecation)
  async get(@Param('petId') petId: string) {
    return getPet(petId);
  }

  @All()
  collection(): never {
    throw new HttpError(405, 'Method not allowed on /v1/pets: use GET or POST', { Allow: 'GET, POST' });
  }

  @All(':petId')
  item(): never {
    throw new HttpError(405, 'Method not allowed on /v1/pets/{petId}: use GET', { Allow: 'GET' });
  }
}

@Module({
  controllers: [HealthController, PetsController],
  providers: [
    { provide: APP_GUARD, useClass: KeyGuard },
    { provide: APP_FILTER, useClass: ErrorBodyFilter },
  ],
})
class BaselineModule {}

const app = await NestFactory.create<NestExpressApplication>(BaselineModule, { bodyParser: false, logger: ['error'] });
app.disable('x-powered-by');
app.set('etag', false);
app.use((request: Request, response: Response, next: NextFunction) => {
  response.setHeader('X-Content-Type-Options', 'nosniff');
  if (request.path.startsWith('/v1/')) response.setHeader('Cache-Control', 'no-store');
  next();
});
app.useBodyParser('json', { limit: BODY_LIMIT_BYTES, strict: false, type: () => true });
await app.listen(Number(process.env.PORT ?? 3001), process.env.HOST ?? '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().finally(() => void closePool().finally(() => process.exit(0))));
}
