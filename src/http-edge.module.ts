import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ErrorFilter } from './interface/http/platform/error.filter.js';
import { ShutdownState } from './interface/http/platform/shutdown-state.js';

/**
 * The HTTP edge every route shares: the one Error body for whatever fails (ErrorFilter), and the
 * shutdown's state that answers and /readyz read. The middleware around the routes is set up in
 * app.ts, in the order it runs.
 */
@Module({
  providers: [ShutdownState, { provide: APP_FILTER, useClass: ErrorFilter }],
  exports: [ShutdownState],
})
export class HttpEdgeModule {}
