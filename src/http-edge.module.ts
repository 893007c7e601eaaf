import { Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { BodyValidationPipe } from './interface/http/platform/body-validation.pipe.js';
import { ErrorFilter } from './interface/http/platform/error.filter.js';
import { ShutdownState } from './interface/http/platform/shutdown-state.js';

/**
 * The HTTP edge every route shares: request bodies checked by their DTO's class-validator rules
 * (Nest's ValidationPipe, as BodyValidationPipe), the one Error body for whatever fails
 * (ErrorFilter), and the shutdown's state that answers and /readyz read. The middleware around the routes is set up in
 * app.ts, in the order it runs.
 */
@Module({
  providers: [
    ShutdownState,
    { provide: APP_PIPE, useClass: BodyValidationPipe },
    { provide: APP_FILTER, useClass: ErrorFilter },
  ],
  exports: [ShutdownState],
})
export class HttpEdgeModule {}
