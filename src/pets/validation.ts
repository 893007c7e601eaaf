import { type ArgumentMetadata, type PipeTransform, ValidationPipe, type ValidationError } from '@nestjs/common';
import { PAGE_LIMIT } from '../application/list-pets.js';
import { isPetStatus, type NewPetInput, newPetProblems, statusProblems } from '../domain/pet.js';
import { ApiError } from '../platform/http/api-error.js';
import { propertyOf } from '../platform/property-of.js';
import type { ListPetsQuery } from './pet.dto.js';

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

/**
 * The NewPet body, which JsonBodyGuard has read and found to be a JSON object: Nest's
 * ValidationPipe with whitelist and forbidNonWhitelisted, so a property NewPet does not define (a
 * typo such as categoryID, or id) is refused. The values are the domain's to check (newPet());
 * a body refused here for its properties also names what newPet() would refuse in it, so that one
 * 400 names every offending field. The pipe silently drops keys named like Object.prototype members
 * (`constructor`, `__proto__`, `prototype`, ...) before it validates: those are named here too.
 */
export class BodyValidationPipe implements PipeTransform {
  // No implicit conversion (class-transformer's default: "5" stays a string and fails the integer rule).
  private readonly pipe = new ValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: true,
    exceptionFactory: (errors: ValidationError[]) => new InvalidInput(problemsOf(errors)),
  });

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
          `Invalid request body: ${[...new Set([...prototypeNamed, ...error.problems, ...newPetProblems(fieldsOf(value))])].join('; ')}`,
        );
      throw error;
    }
  }
}

function fieldsOf(body: unknown): NewPetInput {
  return {
    name: propertyOf(body, 'name'),
    categoryId: propertyOf(body, 'categoryId'),
    status: propertyOf(body, 'status'),
  };
}

/**
 * The query of listPets, by the same rule functions, without ValidationPipe: on the most called
 * path it cost more than anything else the service adds (docs/performance.md), and none of its
 * options changed that. Unknown parameters are ignored (the decisions); one 400 names every problem.
 */
export class ListPetsQueryPipe implements PipeTransform<unknown, ListPetsQuery> {
  private readonly limitRule = onlyOnce('limit', limitProblems);
  private readonly statusRule = onlyOnce('status', statusProblems);
  private readonly cursorRule = onlyOnce('cursor', cursorProblems);

  transform(value: unknown): ListPetsQuery {
    const query = typeof value === 'object' && value !== null ? value : {};
    const limit: unknown = Reflect.get(query, 'limit');
    const status: unknown = Reflect.get(query, 'status');
    const cursor: unknown = Reflect.get(query, 'cursor');
    const problems = [
      ...(limit === undefined ? [] : this.limitRule(limit)),
      ...(status === undefined ? [] : this.statusRule(status)),
      ...(cursor === undefined ? [] : this.cursorRule(cursor)),
    ];
    if (problems.length > 0) throw new ApiError(400, `Invalid query: ${problems.join('; ')}`);
    return {
      limit: typeof limit === 'string' ? limit : undefined,
      status: isPetStatus(status) ? status : undefined,
      cursor: typeof cursor === 'string' ? cursor : undefined,
    };
  }
}
