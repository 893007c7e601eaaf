// What EnvironmentVariables needs beyond class-validator's own decorators: the transforms that turn
// an environment variable's text into its value, the one-line messages, and the few rules no
// built-in decorator says exactly (URLs as Node's URL reads them, addresses with a CIDR prefix).
// Lists are checked item by item with class-validator's own `{ each: true }`.
import { isIP } from 'node:net';
import { Transform } from 'class-transformer';
import { ValidateBy, type ValidationArguments, type ValidationOptions } from 'class-validator';

/** The text, trimmed; blank is unset, so the class's default stands. */
export function Trimmed(): PropertyDecorator {
  return Transform(({ value }) => textOf(value));
}

/** Trimmed and lower-cased: levels, formats and switches are read in any case. */
export function LowerCased(): PropertyDecorator {
  return Transform(({ value }) => textOf(value)?.toLowerCase());
}

/** on or off, lower-cased; true and 1 read as on, false and 0 as off. */
export function ToSwitch(): PropertyDecorator {
  return Transform(({ value }) => {
    const text = textOf(value)?.toLowerCase();
    return text === 'true' || text === '1' ? 'on' : text === 'false' || text === '0' ? 'off' : text;
  });
}

/** Digits become the number they spell; any other text is kept for the rule to refuse and quote. */
export function ToInteger(): PropertyDecorator {
  return Transform(({ value }) => numberIf(/^\d+$/, value));
}

/** Digits with an optional fraction (0.5) become that number; any other text is kept, as above. */
export function ToDecimal(): PropertyDecorator {
  return Transform(({ value }) => numberIf(/^\d+(\.\d+)?$/, value));
}

/** Any text JavaScript reads as a finite number (as OpenTelemetry's SDK reads its settings). */
export function ToNumber(): PropertyDecorator {
  return Transform(({ value }) => {
    const text = textOf(value);
    return text !== undefined && Number.isFinite(Number(text)) ? Number(text) : text;
  });
}

/** A comma-separated list: its items trimmed, empty ones dropped. */
export function ToList(): PropertyDecorator {
  return Transform(({ value }) =>
    (textOf(value) ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== ''),
  );
}

/** The message of a broken rule, in one line: `PORT must be <rule>, got "<value>"`. */
export function mustBe(rule: string): ValidationOptions {
  return {
    message: ({ property, value }: ValidationArguments) => `${property} must be ${rule}, got "${String(value)}"`,
  };
}

/**
 * A value that passes `test`, a rule no built-in decorator says exactly; with `{ each: true }`,
 * class-validator applies it to each item of a list.
 */
export function Satisfies(
  name: string,
  test: (text: string) => boolean,
  validationOptions: ValidationOptions,
): PropertyDecorator {
  return ValidateBy(
    { name, validator: { validate: (value: unknown) => typeof value === 'string' && test(value) } },
    validationOptions,
  );
}

/**
 * The first item of a list that fails `test`, and where it is (from 1): what the message of a
 * `{ each: true }` rule names (class-validator gives the message the whole list).
 */
export function firstFailing(list: unknown, test: (item: string) => boolean): { item: string; position: number } {
  const items = Array.isArray(list) ? list.map(String) : [];
  const index = items.findIndex((item) => !test(item));
  return { item: items[index] ?? '', position: index + 1 };
}

/**
 * A PostgreSQL URL. The message says what is wrong without quoting the URL, which may hold a
 * password.
 */
export function IsPostgresUrl(): PropertyDecorator {
  return ValidateBy({
    name: 'isPostgresUrl',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && postgresUrlProblem(value) === null,
      defaultMessage: ({ property, value }: ValidationArguments) => `${property} ${postgresUrlProblem(String(value))}`,
    },
  });
}

/** What is wrong with a PostgreSQL URL, never quoting it; null when nothing is. */
export function postgresUrlProblem(text: string): string | null {
  const url = URL.parse(text);
  if (url === null) return 'is not a valid URL (expected postgres://user:password@host:port/database)';
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    return `must start with postgres:// or postgresql://, got "${url.protocol}//"`;
  return null;
}

/** A URL, as Node's URL (and so pg, ioredis and the OTLP exporter) reads it, with one of these schemes ('http:'). */
export function IsUrlWithScheme(schemes: string[], validationOptions: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    { name: 'isUrlWithScheme', validator: { validate: (value: unknown) => isUrlWithScheme(value, schemes) } },
    validationOptions,
  );
}

/** An absolute http(s) URL, or a path such as /v1 (the OpenAPI document's servers). */
export function IsHttpUrlOrPath(validationOptions: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isHttpUrlOrPath',
      validator: {
        validate: (value: unknown) =>
          (typeof value === 'string' && /^\/\S*$/.test(value)) || isUrlWithScheme(value, ['http:', 'https:']),
      },
    },
    validationOptions,
  );
}

/** An IPv4 or IPv6 address, with or without a CIDR prefix (10.0.0.0/8), as Express's `trust proxy` takes it. */
export function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  const bits = family === 4 ? 32 : 128;
  return (
    family !== 0 &&
    extra === undefined &&
    (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits))
  );
}

/** An origin exactly as a browser sends it in `Origin`: http(s), host and port; no path, no trailing slash. */
export function isOrigin(entry: string): boolean {
  const url = URL.parse(entry);
  return url !== null && /^https?:$/.test(url.protocol) && url.origin === entry;
}

function isUrlWithScheme(value: unknown, schemes: string[]): boolean {
  const url = typeof value === 'string' ? URL.parse(value) : null;
  return url !== null && schemes.includes(url.protocol);
}

function textOf(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function numberIf(form: RegExp, value: unknown): number | string | undefined {
  const text = textOf(value);
  return text !== undefined && form.test(text) ? Number(text) : text;
}
