import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  IsIn,
  IsInt,
  IsString,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  type ValidationArguments,
  type ValidationOptions,
} from 'class-validator';
import { PAGE_LIMIT } from '../../../application/pets/list-pets.js';
import {
  categoryIdProblems,
  codePointName,
  type CodePointRange,
  MAX_CATEGORY_ID,
  MIN_CATEGORY_ID,
  nameProblems,
  type Pet,
  PET_NAME_FORBIDDEN,
  PET_NAME_MARKS,
  PET_NAME_MAX_LENGTH,
  PET_NAME_SPACES,
  PET_STATUSES,
  type PetStatus,
  statusProblems,
} from '../../../domain/pets/pet.js';
import { PET_NAME_NOT_PATTERN, PET_NAME_PATTERN, PET_NAME_REGEX } from './pet-name-pattern.js';

/*
 * What createPet, listPets and getPet take and give on the wire, as the document shows them. The
 * rules of NewPet are class-validator's decorators, checked by BodyValidationPipe; the query of
 * listPets is read by ListPetsQueryPipe.
 */

/**
 * A decorator's message in the domain's words: what its rule function says of the value, so that a
 * 400 reads as newPet() would have it (the character and where it is, for a name).
 */
const inTheWordsOf = (rule: (value: unknown) => string[]): ValidationOptions => ({
  message: ({ value }: ValidationArguments) => rule(value).join('; '),
});
const NAME_RULE = inTheWordsOf(nameProblems);
const CATEGORY_ID_RULE = inTheWordsOf(categoryIdProblems);
const STATUS_RULE = inTheWordsOf(statusProblems);

/**
 * At most `max` characters, counted in code points as the store counts its varchar: MaxLength
 * counts U+FE0E and U+FE0F (variation selectors, which a name may hold) as nothing.
 */
export function MaxCodePoints(max: number, options: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxCodePoints',
      // A text of at most `max` UTF-16 units cannot have more code points: only longer ones are counted.
      validator: {
        validate: (value) => typeof value === 'string' && (value.length <= max || [...value].length <= max),
      },
    },
    options,
  );
}

/** Checked only when given: IsOptional() would let null through too, and null is no status. */
const IfGiven = (): PropertyDecorator => ValidateIf((_object: object, value: unknown) => value !== undefined);

// Stryker disable all: the document's declarations, checked by the e2e snapshot of docs/openapi.json (the
// rules' decorators below hold nothing a mutant could change: their messages and constraints are above)
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
 * Every status refers to the one PetStatus schema, which carries the description: OpenAPI 3.0
 * ignores whatever stands beside a reference (api-document.ts leaves the reference bare).
 */
const PET_STATUS_SCHEMA = {
  enum: PET_STATUSES,
  enumName: 'PetStatus',
  enumSchema: { description: "An animal's availability status." },
};

/**
 * The body of createPet, with the rules of its fields. BodyValidationPipe refuses every other
 * property; newPet() in the domain still guards the same rules, for callers that do not come
 * through HTTP.
 */
@ApiSchema({
  name: 'NewPet',
  description:
    'An animal to add to the store; its `status` is `available` when omitted. No other properties are allowed.',
})
export class NewPetRequest {
  @ApiProperty({
    description: NAME_DESCRIPTION,
    minLength: 1,
    maxLength: PET_NAME_MAX_LENGTH,
    pattern: PET_NAME_PATTERN,
    not: { pattern: PET_NAME_NOT_PATTERN },
    example: 'Rex',
  })
  @IsString(NAME_RULE)
  @MaxCodePoints(PET_NAME_MAX_LENGTH, NAME_RULE)
  @Matches(PET_NAME_REGEX, NAME_RULE)
  name!: string;

  @ApiProperty({
    description: 'Identifier of the category the animal belongs to.',
    type: 'integer',
    format: 'int64',
    minimum: MIN_CATEGORY_ID,
    maximum: MAX_CATEGORY_ID,
    example: 1,
  })
  @IsInt(CATEGORY_ID_RULE)
  @Min(MIN_CATEGORY_ID, CATEGORY_ID_RULE)
  @Max(MAX_CATEGORY_ID, CATEGORY_ID_RULE)
  categoryId!: number;

  @ApiPropertyOptional(PET_STATUS_SCHEMA)
  @IfGiven()
  @IsIn(PET_STATUSES, STATUS_RULE)
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

  @ApiProperty(PET_STATUS_SCHEMA)
  status!: PetStatus;
}

/**
 * The query of listPets, as the document shows it; ListPetsQueryPipe reads it (each parameter at
 * most once, unknown ones ignored), which is why BodyValidationPipe leaves queries alone.
 */
export class ListPetsQuery {
  // No `pattern`: JSON Schema applies it to strings only, and this is an integer.
  @ApiPropertyOptional({
    description: `Maximum number of animals returned: decimal digits only (\`${PAGE_LIMIT.default}\`, \`007\`; not \`+5\`, \`5.0\` or \`1e1\`), at most once.`,
    type: 'integer',
    format: 'int32',
    minimum: PAGE_LIMIT.min,
    maximum: PAGE_LIMIT.max,
    default: PAGE_LIMIT.default,
  })
  limit?: string;

  @ApiPropertyOptional({ description: 'Filters by availability status, at most once.', ...PET_STATUS_SCHEMA })
  status?: PetStatus;

  @ApiPropertyOptional({
    description:
      'Opaque position from the `Link: <...>; rel="next"` header of the previous page, at most once. Only a cursor this service issued, for the same `status`, is accepted.',
  })
  cursor?: string;
}
// Stryker restore all

/** Built field by field: nothing reaches the wire that is not in the Pet schema. */
export function toPetResponse(pet: Pet): PetResponse {
  return { id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
}
