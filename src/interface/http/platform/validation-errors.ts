import type { ValidationError } from 'class-validator';
import { ApiError } from './api-error.js';

/** A field name as a message shows it: quoted and escaped, so that an empty, long or odd name stays readable. */
export function quoteField(name: string): string {
  return JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
}

/** What a 400 says of a property the body's DTO does not define. */
export function unknownField(name: string): string {
  return `${quoteField(name)} is not a known field`;
}

/**
 * What class-validator found, as the 400 words it: a property the DTO does not define by its name
 * (forbidNonWhitelisted), a broken rule by its decorator's message (the domain's words).
 */
export function problemsOf(errors: ValidationError[]): string[] {
  return errors.flatMap((error) =>
    Object.entries(error.constraints ?? {}).map(([rule, message]) =>
      rule === 'whitelistValidation' ? unknownField(error.property) : message,
    ),
  );
}

/** The one 400 for a body that breaks the rules, naming every problem (BodyValidationPipe's, and newPet()'s). */
export function invalidBody(problems: string[]): ApiError {
  return new ApiError(400, `Invalid request body: ${problems.join('; ')}`);
}
