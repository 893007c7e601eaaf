import { type ArgumentMetadata, Injectable, ValidationPipe, type ValidationError } from '@nestjs/common';
import { invalidBody, problemsOf, unknownField } from './validation-errors.js';

/** What the exception factory gives transform(): the problems class-validator found, in words. */
class InvalidBody {
  constructor(readonly problems: string[]) {}
}

/**
 * Nest's ValidationPipe, registered for the whole app (APP_PIPE), checking a request body by the
 * class-validator decorators of its DTO: whitelist with forbidNonWhitelisted refuses a property the
 * DTO does not define (a typo, or `id`); no implicit conversion ("5" stays a string and fails an
 * integer rule); the first broken rule of a field is enough, since a field's rules answer in the
 * domain's words; one 400 names every offending field.
 *
 * Two things on top of Nest's. Bodies only: queries and path parameters are read by the routes'
 * own pipes, which ignore unknown query parameters. Nest and class-transformer drop keys named like
 * Object.prototype members (`constructor`, `__proto__`, `prototype`, `toString`, ...) before any
 * rule sees them, against prototype pollution: those are named here, in the same 400.
 */
@Injectable()
export class BodyValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      stopAtFirstError: true,
      exceptionFactory: (errors: ValidationError[]) => new InvalidBody(problemsOf(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'body') return value;
    const prototypeNamed = prototypeNamedKeys(value).map(unknownField);
    let body: unknown;
    try {
      body = await super.transform(value, metadata);
    } catch (error) {
      if (error instanceof InvalidBody) throw invalidBody([...prototypeNamed, ...error.problems]);
      throw error;
    }
    if (prototypeNamed.length > 0) throw invalidBody(prototypeNamed);
    return body;
  }
}

function prototypeNamedKeys(value: unknown): string[] {
  return Object.keys(value ?? {}).filter((key) => key in Object.prototype || key === 'prototype');
}
