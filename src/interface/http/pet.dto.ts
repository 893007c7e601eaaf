import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import { PAGE_LIMIT } from '../../application/list-pets.js';
import { categoryIdProblems, MAX_CATEGORY_ID, nameProblems, PET_NAME_MAX_LENGTH, statusProblems, type Pet } from '../../domain/pet.js';
import { PET_STATUSES, type PetStatus } from '../../domain/pet-status.js';
import { SatisfiesRule } from './validation.js';

@ApiSchema({ name: 'NewPet', description: 'An animal to add to the store.' })
export class NewPetRequest {
  @ApiProperty({ description: "The animal's name: at least one non-whitespace character.", minLength: 1, maxLength: PET_NAME_MAX_LENGTH, example: 'Rex' })
  @SatisfiesRule(nameProblems)
  name!: string;

  @ApiProperty({ description: 'Identifier of the category the animal belongs to.', type: 'integer', format: 'int64', minimum: 1, maximum: MAX_CATEGORY_ID, example: 1 })
  @SatisfiesRule(categoryIdProblems)
  categoryId!: number;

  @ApiPropertyOptional({ description: 'Availability status; `available` when omitted.', enum: PET_STATUSES, enumName: 'PetStatus' })
  // Omitted is fine; null is not a status.
  @ValidateIf((request: NewPetRequest) => request.status !== undefined)
  @SatisfiesRule(statusProblems)
  status?: PetStatus;
}

@ApiSchema({ name: 'Pet', description: 'An animal as the store returns it.' })
export class PetResponse {
  @ApiProperty({ description: 'Unique identifier, assigned by the service on creation.', type: 'integer', format: 'int64', example: 1 })
  id!: number;

  @ApiProperty({ description: "The animal's name.", example: 'Rex' })
  name!: string;

  @ApiProperty({ description: 'Identifier of the category the animal belongs to.', type: 'integer', format: 'int64', example: 1 })
  categoryId!: number;

  @ApiProperty({ description: 'Availability status.', enum: PET_STATUSES, enumName: 'PetStatus' })
  status!: PetStatus;
}

/** Built field by field: nothing reaches the wire that is not in the Pet schema. */
export function toPetResponse(pet: Pet): PetResponse {
  return { id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
}

function onlyOnce(name: string, rule: (value: unknown) => string[]): (value: unknown) => string[] {
  return (value) => (Array.isArray(value) ? [`${name} must be given only once`] : rule(value));
}

function limitProblems(value: unknown): string[] {
  const ok = typeof value === 'string' && /^\d{1,3}$/.test(value) && Number(value) >= PAGE_LIMIT.min && Number(value) <= PAGE_LIMIT.max;
  return ok ? [] : [`limit must be an integer from ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}`];
}

function cursorProblems(value: unknown): string[] {
  return typeof value === 'string' ? [] : ['cursor must be a string'];
}

const given = (_query: object, value: unknown): boolean => value !== undefined;

/** The query of listPets: each parameter at most once, checked by the same rule functions as the domain. */
export class ListPetsQuery {
  @ApiPropertyOptional({ description: 'Maximum number of animals returned: decimal digits only.', type: 'integer', format: 'int32', minimum: PAGE_LIMIT.min, maximum: PAGE_LIMIT.max, default: PAGE_LIMIT.default })
  @ValidateIf(given)
  @SatisfiesRule(onlyOnce('limit', limitProblems))
  limit?: string;

  @ApiPropertyOptional({ description: 'Filters by availability status.', enum: PET_STATUSES, enumName: 'PetStatus' })
  @ValidateIf(given)
  @SatisfiesRule(onlyOnce('status', statusProblems))
  status?: PetStatus;

  @ApiPropertyOptional({ description: 'Opaque position from the `Link: <...>; rel="next"` header of the previous page. Only a cursor this service issued, for the same `status`, is accepted.' })
  @ValidateIf(given)
  @SatisfiesRule(onlyOnce('cursor', cursorProblems))
  cursor?: string;
}
