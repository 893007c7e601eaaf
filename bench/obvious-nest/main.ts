/**
 * The obvious NestJS app for this API, as the NestJS docs and `nest new` would have it: NestJS on
 * Express, a TypeORM entity read with find/findOneBy and written with save, ValidationPipe with
 * transform and whitelist on the DTOs, a guard comparing a configured key, an exception filter
 * producing the Error body. No request log, metrics, request id, key store, paging links or
 * commit-ordered creates. Standalone on purpose (nothing from src/): it is the peer the service is
 * measured against (issue 24). Env: PORT, HOST, DATABASE_URL, API_KEYS.
 */
import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { ErrorBodyFilter } from './error-body.filter.js';

const app = await NestFactory.create(AppModule, { logger: ['error'] });
app.useGlobalPipes(new ValidationPipe({ transform: true, whitelist: true }));
app.useGlobalFilters(new ErrorBodyFilter());
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
