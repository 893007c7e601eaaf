// Loaded before every e2e test file (jest.config.js): every response an e2e test receives from a
// /v1 operation is checked against the OpenAPI document, so the document cannot drift from the
// behaviour. Status declared, body valid against its schema, required headers present.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';

const document: unknown = JSON.parse(readFileSync('docs/openapi.json', 'utf8'));
// OpenAPI 3.0 schemas are JSON Schema with extra keywords (example, format int64): not strict.
const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(isObject(document) ? document : {}, 'openapi');

const violations: string[] = [];
const realFetch = globalThis.fetch;

globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const response = await realFetch(input, init);
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toLowerCase();
  const url = new URL(input instanceof Request ? input.url : input.toString());
  const problem = await check(method, url.pathname, response.clone());
  if (problem !== null) {
    violations.push(problem);
    throw new Error(`OpenAPI contract violation: ${problem}`);
  }
  return response;
};

afterEach(() => {
  // Also fails a test that caught the error thrown above.
  const found = violations.splice(0);
  expect(found).toEqual([]);
});

/** The document's path template for a /v1 path, or null for paths it does not describe. */
function templateOf(path: string): string | null {
  if (path === '/v1/pets') return '/pets';
  if (/^\/v1\/pets\/[^/]+$/.test(path)) return '/pets/{petId}';
  return null;
}

async function check(method: string, path: string, response: Response): Promise<string | null> {
  const template = templateOf(path);
  const operation = template === null ? undefined : at(document, ['paths', template, method]);
  if (template === null || !isObject(operation)) return null; // unknown path or method: not an operation
  const where = `${method.toUpperCase()} ${template} -> ${response.status}`;
  const declared = at(operation, ['responses', String(response.status)]);
  if (!isObject(declared)) return `${where}: status not declared`;

  for (const [name, header] of Object.entries(at(declared, ['headers']) ?? {})) {
    if (isObject(header) && header.required === true && !response.headers.has(name))
      return `${where}: required header ${name} missing`;
  }
  const schemaPointer = [
    'paths',
    template,
    method,
    'responses',
    String(response.status),
    'content',
    'application/json',
    'schema',
  ];
  if (method === 'head' || !isObject(at(document, schemaPointer))) return null;
  if (!(response.headers.get('content-type') ?? '').startsWith('application/json'))
    return `${where}: body is not application/json`;
  const body: unknown = JSON.parse(await response.text());
  const validate = ajv.getSchema(
    `openapi#/${schemaPointer.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`,
  );
  if (validate === undefined) return `${where}: schema not found`;
  return validate(body)
    ? null
    : `${where}: body ${JSON.stringify(body).slice(0, 200)} breaks the schema: ${ajv.errorsText(validate.errors)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function at(value: unknown, path: string[]): Record<string, unknown> | undefined {
  let current: unknown = value;
  for (const part of path) current = isObject(current) ? current[part] : undefined;
  return isObject(current) ? current : undefined;
}
