import type { PipeTransform } from '@nestjs/common';
import { PAGE_LIMIT } from '../../../application/pets/list-pets.js';
import { isPetStatus, statusProblems } from '../../../domain/pets/pet.js';
import { ApiError } from '../platform/api-error.js';
import type { ListPetsQuery } from './pet.dto.js';

/** Decimal digits only (no sign, point, exponent or spaces), leading zeros allowed. */
const DIGITS = /^[0-9]+$/;

/** A query parameter given twice arrives as an array. */
export function onlyOnce(name: string, rule: (value: unknown) => string[]): (value: unknown) => string[] {
  return (value) => (Array.isArray(value) ? [`${name} must be given only once`] : rule(value));
}

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

/**
 * The query of listPets, by hand rather than by ValidationPipe: on the most called path it cost
 * more than anything else the service adds (docs/performance.md), and none of its options changed
 * that. Unknown parameters are ignored (the decisions); one 400 names every problem.
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
