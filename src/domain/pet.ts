import { InvalidPetError } from './errors.js';
import { DEFAULT_PET_STATUS, isPetStatus, PET_STATUSES, type PetStatus } from './pet-status.js';

export const PET_NAME_MAX_LENGTH = 255;
/** Largest id a JSON client reads exactly (2^53 - 1); larger int64 values would be rounded. */
export const MAX_CATEGORY_ID = Number.MAX_SAFE_INTEGER;
export const MAX_PET_ID = Number.MAX_SAFE_INTEGER;

export type NewPet = { name: string; categoryId: number; status: PetStatus };

export type Pet = NewPet & { id: number };

export type NewPetInput = { name: unknown; categoryId: unknown; status?: unknown };

/**
 * The one source of the pet rules: applies the default status and refuses anything the store
 * could not keep exactly. Every problem is reported at once.
 */
export function newPet(input: NewPetInput): NewPet {
  const problems = [
    ...nameProblems(input.name),
    ...categoryIdProblems(input.categoryId),
    ...(input.status === undefined ? [] : statusProblems(input.status)),
  ];
  if (problems.length > 0) throw new InvalidPetError(problems);
  return {
    name: input.name as string,
    categoryId: input.categoryId as number,
    status: isPetStatus(input.status) ? input.status : DEFAULT_PET_STATUS,
  };
}

export function nameProblems(name: unknown): string[] {
  if (typeof name !== 'string') return ['name must be a string'];
  // Blank: JavaScript's \s (which has U+FEFF) or Unicode's White_Space (which has U+0085).
  if (!/[^\s\p{White_Space}]/u.test(name)) return ['name must contain at least one non-whitespace character'];
  // Counted in code points, as PostgreSQL counts varchar(255); a name of at most 255 UTF-16 units
  // cannot have more code points, so only longer ones are counted.
  if (name.length > PET_NAME_MAX_LENGTH && [...name].length > PET_NAME_MAX_LENGTH) {
    return [`name must be at most ${PET_NAME_MAX_LENGTH} characters long`];
  }
  // PostgreSQL text cannot hold NUL, and a lone surrogate would be stored as U+FFFD: refuse
  // rather than store something other than what was sent.
  if (name.includes('\u0000') || !name.isWellFormed()) {
    return ['name must be well-formed Unicode text without NUL characters'];
  }
  return [];
}

export function categoryIdProblems(categoryId: unknown): string[] {
  if (typeof categoryId !== 'number' || !Number.isInteger(categoryId) || categoryId < 1 || categoryId > MAX_CATEGORY_ID) {
    return [`categoryId must be an integer from 1 to ${MAX_CATEGORY_ID}`];
  }
  return [];
}

export function statusProblems(status: unknown): string[] {
  return isPetStatus(status) ? [] : [`status must be one of ${PET_STATUSES.join(', ')}`];
}
