import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ValidateBy } from 'class-validator';
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

/** One 400 whose message names every offending field. */
function describe(errors: ValidationError[]): string {
  return errors
    .flatMap((error) =>
      Object.entries(error.constraints ?? {}).map(([constraint, message]) =>
        constraint === 'whitelistValidation' ? `${error.property} is not a known field` : message,
      ),
    )
    .join('; ');
}

const common = {
  whitelist: true,
  transform: true,
  // "5" stays a string and fails the integer rule: no implicit conversion.
  transformOptions: { enableImplicitConversion: false },
  validationError: { target: false, value: false },
} as const;

/** Request bodies: a property NewPet does not define (a typo such as categoryID, or id) is refused. */
export const bodyValidation = new ValidationPipe({
  ...common,
  forbidNonWhitelisted: true,
  exceptionFactory: (errors) => new ApiError(400, `Invalid request body: ${describe(errors)}`),
});

/** Query strings: unknown parameters are ignored, known ones checked. */
export const queryValidation = new ValidationPipe({
  ...common,
  forbidNonWhitelisted: false,
  exceptionFactory: (errors) => new ApiError(400, `Invalid query: ${describe(errors)}`),
});
