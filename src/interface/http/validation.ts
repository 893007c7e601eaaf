import type { ArgumentMetadata, PipeTransform } from '@nestjs/common';
import { stripProtoKeys } from '@nestjs/common/utils/strip-proto-keys.util.js';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, ValidateBy, validateSync } from 'class-validator';
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

/**
 * One 400 whose message names every offending field, a property the DTO does not
 * define (a typo such as categoryID, or id) is one of them. The unknown keys are found here from
 * the raw object: class-validator's whitelist lets through keys named like Object.prototype
 * members (constructor, toString, __proto__, ...).
 *
 * class-transformer and class-validator are called directly, and synchronously, rather than
 * through Nest's ValidationPipe: on a flat object already parsed and checked by JsonBodyGuard, its
 * other walks (array gaps, binary values) and its promises were most of the pipe's cost, about 5%
 * of a create's CPU in the profile. Its prototype-key stripping is kept: class-transformer reads
 * `constructor` on nested values and throws on one a client wrote, e.g. {"name":{"constructor":{}}}.
 */
class BodyValidationPipe implements PipeTransform {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype } = metadata;
    if (!metatype) return value;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ApiError(400, 'Request body must be a JSON object');
    const unknown = unknownFields(value, metatype);
    const known = unknown.length === 0 ? value : Object.fromEntries(Object.entries(value).filter(([key]) => !unknown.includes(key)));
    stripProtoKeys(known);
    // "5" stays a string and fails the integer rule: no implicit conversion.
    const entity = plainToInstance(metatype, known, { enableImplicitConversion: false }) as object;
    const ruleProblems = validateSync(entity, { forbidUnknownValues: false, validationError: { target: false, value: false } }).flatMap((error) =>
      Object.values(error.constraints ?? {}),
    );
    const problems = [...unknown.map((field) => `${field} is not a known field`), ...ruleProblems];
    if (problems.length > 0) throw new ApiError(400, `Invalid request body: ${problems.join('; ')}`);
    return entity;
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
