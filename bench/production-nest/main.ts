/**
 * The obvious NestJS app (bench/obvious-nest, its files reused) as the NestJS documentation's
 * production chapters would have it: helmet() from the Security chapter, nestjs-pino's request
 * log at its defaults as the Logger chapter points to, @nestjs/throttler from the Rate Limiting
 * chapter (app.module.ts). Env: PORT, HOST, DATABASE_URL, API_KEYS.
 */
import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import { ErrorBodyFilter } from '../obvious-nest/error-body.filter.js';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule, { bufferLogs: true });
app.useLogger(app.get(Logger));
app.use(helmet());
app.useGlobalPipes(new ValidationPipe({ transform: true, whitelist: true }));
app.useGlobalFilters(new ErrorBodyFilter());
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
