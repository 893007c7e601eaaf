import type { LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';

/**
 * Nest's own log lines (start-up, route mapping, uncaught errors) through our pino logger, as
 * `{context, msg}` or `{context, err, msg}`.
 *
 * Written here rather than taken from nestjs-pino: its module also installs a middleware that
 * runs every request inside an AsyncLocalStorage store for request-scoped loggers, which we do
 * not use, and on Node 20 any AsyncLocalStorage in use switches on promise hooks for every
 * promise of every request (~4% of a list request in the profile).
 */
export class NestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  /** Nest calls error(message, stack?, context?). */
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.logger.isLevelEnabled(level)) return;
    // The last string parameter is the context (the class that logs); a string before it, on
    // error(), is a stack trace.
    const context = typeof params.at(-1) === 'string' ? String(params.pop()) : undefined;
    const stack = params.find((param): param is string => typeof param === 'string');
    const fields: Record<string, unknown> = context === undefined ? {} : { context };
    if (message instanceof Error) {
      this.logger[level]({ ...fields, err: message }, message.message);
    } else if (typeof message === 'string') {
      this.logger[level](stack === undefined ? fields : { ...fields, err: { stack } }, message);
    } else {
      this.logger[level]({ ...fields, value: message }, 'log');
    }
  }
}
