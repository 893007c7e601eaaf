import { type ArgumentMetadata, type PipeTransform, ValidationPipe, type ValidationError } from '@nestjs/common';
import { ValidateBy } from 'class-validator';
import { PAGE_LIMIT } from '../../application/list-pets.js';
import { ApiError } from './api-error.js';

/** Applies a domain rule (a function listing problems) as a class-validator decorator: the rules live once, in the domain. */
export function SatisfiesRule(problems: (value: unknown) => string[]): PropertyDecorator {
  return ValidateBy({
    name: 'satisfiesRule',
    validator: {
      validate: (value: unknown) => problems(value).length === 0,
      defaultMessage: (args) => problems(args?.value).join('; '),
    },
  });
}

/** A query parameter given twice arrives as an array. */
export function onlyOnce(name: string, rule: (value: unknown) => string[]): (value: unknown) => string[] {
  return (value) => (Array.isArray(value) ? [`${name} must be given only once`] : rule(value));
}

/** Decimal digits only (no sign, point, exponent or spaces), leading zeros allowed: what `pattern` says. */
export const LIMIT_PATTERN = '^[0-9]+$';
const DIGITS = new RegExp(LIMIT_PATTERN);

export function limitProblems(value: unknown): string[] {
  const ok =
    typeof value === 'string' &&
    DIGITS.test(value) &&
    Number(value) >= PAGE_LIMIT.min &&
    Number(value) <= PAGE_LIMIT.max;
  return ok ? [] : [`limit must be an integer from ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}`];
}

export function cursorProblems(value: unknown): string[] {
  return typeof value === 'string' ? [] : ['cursor must be a string'];
}

/** A field name as a message shows it: quoted and escaped, so that an empty, long or odd name stays readable. */
export function quoteField(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

class InvalidInput extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

function problemsOf(errors: ValidationError[]): string[] {
  return errors.flatMap((error) =>
    Object.entries(error.constraints ?? {}).map(([rule, message]) =>
      rule === 'whitelistValidation' ? `${quoteField(error.property)} is not a known field` : message,
    ),
  );
}

/** No implicit conversion (class-transformer's default: "5" stays a string and fails the integer rule); every problem at once. */
const shared = {
  transform: true,
  exceptionFactory: (errors: ValidationError[]) => new InvalidInput(problemsOf(errors)),
};

/**
 * Request bodies, which JsonBodyGuard has read and found to be JSON objects: Nest's ValidationPipe
 * with whitelist and forbidNonWhitelisted, so a property the DTO does not define (a typo such as
 * categoryID, or id) is refused. One 400 names every offending field. The pipe silently drops keys
 * named like Object.prototype members (`constructor`, `__proto__`, `prototype`, ...) before it
 * validates: those are named here, in the same 400.
 */
export class BodyValidationPipe implements PipeTransform {
  private readonly pipe = new ValidationPipe({ ...shared, whitelist: true, forbidNonWhitelisted: true });

  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const prototypeNamed = Object.keys(value ?? {})
      .filter((key) => key in Object.prototype || key === 'prototype')
      .map((key) => `${quoteField(key)} is not a known field`);
    try {
      const body: unknown = await this.pipe.transform(value, metadata);
      if (prototypeNamed.length > 0) throw new InvalidInput([]);
      return body;
    } catch (error) {
      if (error instanceof InvalidInput)
        throw new ApiError(
          400,
          `Invalid request body: ${[...new Set([...prototypeNamed, ...error.problems])].join('; ')}`,
        );
      throw error;
    }
  }
}

/** Query parameters: unknown ones are ignored (the decisions), the known ones checked by their DTO. */
export class QueryValidationPipe implements PipeTransform {
  private readonly pipe = new ValidationPipe({ ...shared, whitelist: true, forbidNonWhitelisted: false });

  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    try {
      return await this.pipe.transform(value, metadata);
    } catch (error) {
      if (error instanceof InvalidInput) throw new ApiError(400, `Invalid query: ${error.problems.join('; ')}`);
      throw error;
    }
  }
}
