import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { PAGE_LIMIT } from '../application/list-pets.js';
import {
  codePointName,
  type CodePointRange,
  MAX_CATEGORY_ID,
  type Pet,
  PET_NAME_FORBIDDEN,
  PET_NAME_MARKS,
  PET_NAME_MAX_LENGTH,
  PET_NAME_NOT_PATTERN,
  PET_NAME_PATTERN,
  PET_NAME_SPACES,
  PET_STATUSES,
  type PetStatus,
} from '../domain/pet.js';
import { LIMIT_PATTERN } from './validation.js';

const codePoints = (ranges: readonly CodePointRange[]): string =>
  ranges
    .map(([first, last]) => (first === last ? codePointName(first) : `${codePointName(first)}–${codePointName(last)}`))
    .join(', ');

/** The name rule in words, from the same tables as the check and the pattern. */
const NAME_DESCRIPTION = [
  `The animal's name: 1 to ${PET_NAME_MAX_LENGTH} characters (counted in Unicode code points), at least one of them visible. Ordinary names are fine: "Zoë 🐕", "Renée", "O'Brien", "Rex Jr.".`,
  `Never allowed: ${PET_NAME_FORBIDDEN.map(({ kind, ranges }) => `${kind} (${codePoints(ranges)})`).join('; ')}; lone surrogates.`,
  `Spaces (${codePoints(PET_NAME_SPACES)}) are allowed, but a name of nothing else is blank.`,
  `Joiners and variation selectors (${codePoints(PET_NAME_MARKS)}) are allowed only right after a visible character or another of them, as emoji sequences and Persian text use them.`,
  'Every character beyond U+FFFF (emoji, flag tags, historic scripts) counts as visible.',
  '`pattern` states all of this but the length, lone surrogates and line breaks at the end (which it lets through), and means the same in ECMA-262 with or without the `u` flag, Python, Rust, Go and Java regular expressions; `not` refuses line breaks anywhere.',
].join(' ');

/**
 * The body of createPet as the document shows it. Its fields are only @Allow()ed, so that the
 * validation pipe refuses every other property; the values are checked once, by newPet() in the
 * domain, whose InvalidPetError is the 400.
 */
@ApiSchema({ name: 'NewPet', description: 'An animal to add to the store. No other properties are allowed.' })
export class NewPetRequest {
  @ApiProperty({
    description: NAME_DESCRIPTION,
    minLength: 1,
    maxLength: PET_NAME_MAX_LENGTH,
    pattern: PET_NAME_PATTERN,
    not: { pattern: PET_NAME_NOT_PATTERN },
    example: 'Rex',
  })
  @Allow()
  name!: string;

  @ApiProperty({
    description: 'Identifier of the category the animal belongs to.',
    type: 'integer',
    format: 'int64',
    minimum: 1,
    maximum: MAX_CATEGORY_ID,
    example: 1,
  })
  @Allow()
  categoryId!: number;

  @ApiPropertyOptional({
    description: 'Availability status; `available` when omitted.',
    enum: PET_STATUSES,
    enumName: 'PetStatus',
  })
  @Allow()
  status?: PetStatus;
}

@ApiSchema({ name: 'Pet', description: 'An animal as the store returns it.' })
export class PetResponse {
  @ApiProperty({
    description: 'Unique identifier, assigned by the service on creation.',
    type: 'integer',
    format: 'int64',
    example: 1,
  })
  id!: number;

  @ApiProperty({
    description:
      "The animal's name, as it was sent (see NewPet for the rule; a pet added before that rule may have a name it now refuses).",
    example: 'Rex',
  })
  name!: string;

  @ApiProperty({
    description: 'Identifier of the category the animal belongs to.',
    type: 'integer',
    format: 'int64',
    example: 1,
  })
  categoryId!: number;

  @ApiProperty({ description: 'Availability status.', enum: PET_STATUSES, enumName: 'PetStatus' })
  status!: PetStatus;
}

/** Built field by field: nothing reaches the wire that is not in the Pet schema. */
export function toPetResponse(pet: Pet): PetResponse {
  return { id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
}

/** The query of listPets, as the document shows it; ListPetsQueryPipe checks it (each parameter at most once). */
export class ListPetsQuery {
  @ApiPropertyOptional({
    description: `Maximum number of animals returned: decimal digits only (\`${PAGE_LIMIT.default}\`, \`007\`; not \`+5\`, \`5.0\` or \`1e1\`), at most once.`,
    type: 'integer',
    format: 'int32',
    minimum: PAGE_LIMIT.min,
    maximum: PAGE_LIMIT.max,
    default: PAGE_LIMIT.default,
    pattern: LIMIT_PATTERN,
  })
  limit?: string;

  @ApiPropertyOptional({
    description: 'Filters by availability status, at most once.',
    enum: PET_STATUSES,
    enumName: 'PetStatus',
  })
  status?: PetStatus;

  @ApiPropertyOptional({
    description:
      'Opaque position from the `Link: <...>; rel="next"` header of the previous page, at most once. Only a cursor this service issued, for the same `status`, is accepted.',
  })
  cursor?: string;
}
