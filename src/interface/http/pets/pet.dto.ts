import { type ArgumentMetadata, type PipeTransform, ValidationPipe, type ValidationError } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ValidateBy, ValidateIf } from 'class-validator';
import { PAGE_LIMIT } from '../../../application/pets/list-pets.js';
import {
  categoryIdProblems,
  codePointName,
  type CodePointRange,
  isPetStatus,
  MAX_CATEGORY_ID,
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
import { ApiError } from '../platform/api-error.js';
import { PET_NAME_NOT_PATTERN, PET_NAME_PATTERN } from './pet-name-pattern.js';

/*
 * What createPet, listPets and getPet take and give on the wire: the bodies and the query as the
 * document shows them (the classes), and the pipes that check them before the use cases run.
 */

/** Decimal digits only (no sign, point, exponent or spaces), leading zeros allowed: what `pattern` says. */
export const LIMIT_PATTERN = '^[0-9]+$';
const DIGITS = new RegExp(LIMIT_PATTERN);

// Stryker disable all: the document's declarations, checked by the e2e snapshot of docs/openapi.json
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
 * A domain rule (a function listing what it refuses) as a class-validator constraint: the DTO says
 * which rule applies to which field, and each rule is defined once, in the domain.
 */
export function SatisfiesRule(rule: (value: unknown) => string[]): PropertyDecorator {
  return ValidateBy({
    name: 'satisfiesRule',
    validator: {
      validate: (value: unknown) => rule(value).length === 0,
      defaultMessage: (args) => rule(args?.value).join('; '),
    },
  });
}

/** Checked only when given: IsOptional() would let null through too, and null is no status. */
const IfGiven = (): PropertyDecorator => ValidateIf((_object: object, value: unknown) => value !== undefined);

/**
 * The body of createPet as the document shows it, with the domain's rules for its fields. The
 * validation pipe refuses every other property; newPet() in the domain still guards the same
 * rules, for callers that do not come through HTTP.
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
  @SatisfiesRule(nameProblems)
  name!: string;

  @ApiProperty({
    description: 'Identifier of the category the animal belongs to.',
    type: 'integer',
    format: 'int64',
    minimum: 1,
    maximum: MAX_CATEGORY_ID,
    example: 1,
  })
  @SatisfiesRule(categoryIdProblems)
  categoryId!: number;

  @ApiPropertyOptional({
    description: 'Availability status; `available` when omitted.',
    enum: PET_STATUSES,
    enumName: 'PetStatus',
  })
  @IfGiven()
  @SatisfiesRule(statusProblems)
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
// Stryker restore all

/** Built field by field: nothing reaches the wire that is not in the Pet schema. */
export function toPetResponse(pet: Pet): PetResponse {
  return { id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
}

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
 * ValidationPipe builds a NewPetRequest with class-transformer and checks it by the DTO's rules,
 * with whitelist and forbidNonWhitelisted, so a property NewPet does not define (a typo such as
 * categoryID, or id) is refused too; one 400 names every offending field. Nest and
 * class-transformer drop keys named like Object.prototype members (`constructor`, `__proto__`,
 * `prototype`, `toString`, ...) before any rule sees them, against prototype pollution: those are
 * named here, in the same 400.
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
        throw new ApiError(400, `Invalid request body: ${[...prototypeNamed, ...error.problems].join('; ')}`);
      throw error;
    }
  }
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
