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

  // Nest calls log(message, context?) and the like, and error(message, stack?, context?).
  log = (message: unknown, ...params: unknown[]): void => this.write('info', message, params);
  error = (message: unknown, ...params: unknown[]): void => this.write('error', message, params);
  warn = (message: unknown, ...params: unknown[]): void => this.write('warn', message, params);
  debug = (message: unknown, ...params: unknown[]): void => this.write('debug', message, params);
  verbose = (message: unknown, ...params: unknown[]): void => this.write('trace', message, params);
  fatal = (message: unknown, ...params: unknown[]): void => this.write('fatal', message, params);

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.logger.isLevelEnabled(level)) return;
    // Nest passes (message, context) or, on error(), (message, stack, context). As Nest's own
    // ConsoleLogger does, a last string that looks like a stack trace is the stack, not a context.
    const last = params.at(-1);
    const context = typeof last === 'string' && !isStack(last) ? last : undefined;
    const rest = context === undefined ? params : params.slice(0, -1);
    const stack = rest.find((param): param is string => typeof param === 'string' && isStack(param));
    const error = message instanceof Error ? message : rest.find((param): param is Error => param instanceof Error);
    const others = rest.filter((param) => param !== undefined && param !== stack && param !== error);
    const fields: Record<string, unknown> = {
      ...(context === undefined ? {} : { context }),
      ...(error !== undefined ? { err: error } : stack !== undefined ? { err: { stack } } : {}),
      ...(others.length > 0 ? { params: others } : {}),
      ...(typeof message === 'string' || message instanceof Error ? {} : { value: message }),
    };
    const text = typeof message === 'string' ? message : message instanceof Error ? message.message : 'log';
    this.logger[level](fields, text);
  }
}

function isStack(text: string): boolean {
  return /\n\s+at /.test(text);
}
