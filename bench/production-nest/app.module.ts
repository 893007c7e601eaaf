import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { LoggerModule } from 'nestjs-pino';
import { AppModule as ObviousAppModule } from '../obvious-nest/app.module.js';

/**
 * The obvious app's module, with nestjs-pino's request log at its defaults (a JSON line per
 * request, to stdout) and @nestjs/throttler's guard as the Rate Limiting chapter sets it up, its
 * limit raised as ours is (the bench's 32 connections come from one address): it counts every
 * request and refuses none.
 */
@Module({
  imports: [LoggerModule.forRoot(), ThrottlerModule.forRoot([{ ttl: 60_000, limit: 999_999_999 }]), ObviousAppModule],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})
export class AppModule {}
