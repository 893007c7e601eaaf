import { type ArgumentMetadata, ValidationPipe, type ValidationError } from '@nestjs/common';
import { getMetadataStorage, ValidateBy } from 'class-validator';
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

/** Carries the problems from class-validator to the pipe, which writes the one 400. */
class FieldProblems extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

const common = {
  whitelist: true,
  transform: true,
  // "5" stays a string and fails the integer rule: no implicit conversion.
  transformOptions: { enableImplicitConversion: false },
  validationError: { target: false, value: false },
  exceptionFactory: (errors: ValidationError[]) =>
    new FieldProblems(errors.flatMap((error) => Object.values(error.constraints ?? {}))),
} as const;

/**
 * One 400 whose message names every offending field, a property the DTO does not
 * define (a typo such as categoryID, or id) is one of them. The unknown keys are found here from
 * the raw object: class-validator's whitelist lets through keys named like Object.prototype
 * members (constructor, toString, __proto__, ...).
 */
class BodyValidationPipe extends ValidationPipe {
  constructor() {
    super(common);
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const unknown = metadata.metatype ? unknownFields(value, metadata.metatype) : [];
    const known = typeof value === 'object' && value !== null ? Object.fromEntries(Object.entries(value).filter(([key]) => !unknown.includes(key))) : value;
    const problems = unknown.map((field) => `${field} is not a known field`);
    try {
      const result: unknown = await super.transform(known, metadata);
      if (problems.length === 0) return result;
    } catch (error) {
      if (!(error instanceof FieldProblems)) throw error;
      problems.push(...error.problems);
    }
    throw new ApiError(400, `Invalid request body: ${problems.join('; ')}`);
  }
}

const definedFields = new WeakMap<object, Set<string>>();

function unknownFields(value: unknown, metatype: NonNullable<ArgumentMetadata['metatype']>): string[] {
  if (typeof value !== 'object' || value === null) return [];
  // The DTO's fields do not change: read class-validator's metadata once per class.
  let defined = definedFields.get(metatype);
  if (defined === undefined) {
    defined = new Set(getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false).map((rule) => rule.propertyName));
    definedFields.set(metatype, defined);
  }
  return Object.keys(value).filter((key) => !defined.has(key));
}

/** Request bodies: unknown fields are refused. (The list query has its own, plainer check: parseListPetsQuery.) */
export const bodyValidation = new BodyValidationPipe();
