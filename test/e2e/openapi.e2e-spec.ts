import type {
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  PathItemObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger';
import { parse } from 'yaml';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { startServer, type TestServer } from '../support/server.js';

let database: TestDatabase;
let server: TestServer;
let document: OpenAPIObject;

beforeAll(async () => {
  database = await openTestDatabase();
  server = await startServer(database);
  const served: unknown = await (await fetch(`${server.url}/openapi.json`)).json();
  if (!isOpenAPIObject(served)) throw new Error('/openapi.json is not an OpenAPI document');
  document = served;
});
afterAll(async () => {
  await server?.close();
  await database?.close();
});

describe('the OpenAPI document', () => {
  it('is version 1.0.0 with the production and staging servers from configuration', () => {
    expect(document.openapi).toMatch(/^3\./);
    expect(document.info.version).toBe('1.0.0');
    expect(document.servers?.map((server) => server.url)).toEqual([
      'https://petstore.example.com/v1',
      'https://staging.petstore.example.com/v1',
    ]);
  });

  it('has exactly the three operations, relative to the /v1 servers, with the spec operation ids', () => {
    expect(Object.keys(document.paths).sort()).toEqual(['/pets', '/pets/{petId}']);
    expect(Object.keys(pathItem('/pets')).sort()).toEqual(['get', 'post']);
    expect(Object.keys(pathItem('/pets/{petId}'))).toEqual(['get']);
    expect(operation('/pets', 'get').operationId).toBe('listPets');
    expect(operation('/pets', 'post').operationId).toBe('createPet');
    expect(operation('/pets/{petId}', 'get').operationId).toBe('getPet');
  });

  it('names the schemas as the spec does', () => {
    expect(Object.keys(document.components?.schemas ?? {}).sort()).toEqual([
      'Error',
      'NewPet',
      'Pet',
      'PetStatus',
      'Pets',
    ]);
    expect(schema('PetStatus')).toMatchObject({
      type: 'string',
      enum: ['available', 'pending', 'sold'],
    });
    expect(schema('NewPet').required?.toSorted()).toEqual(['categoryId', 'name']);
    expect(schema('Pet').required?.toSorted()).toEqual(['categoryId', 'id', 'name', 'status']);
    expect(schema('Pet').properties?.id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(schema('Error').required?.toSorted()).toEqual(['code', 'message', 'status']);
    expect(schema('Pets')).toEqual(
      expect.objectContaining({ type: 'array', items: { $ref: '#/components/schemas/Pet' } }),
    );
    expect(response(operation('/pets', 'get'), '200').content?.['application/json']?.schema).toEqual({
      $ref: '#/components/schemas/Pets',
    });
  });

  it('secures every operation with HTTP bearer', () => {
    expect(document.components?.securitySchemes?.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const secured of [operation('/pets', 'get'), operation('/pets', 'post'), operation('/pets/{petId}', 'get')]) {
      expect(secured.security).toEqual([{ bearerAuth: [] }]);
      expect(secured.responses['401']).toBeDefined();
    }
  });

  it('declares limit as an integer from 1 to 100, default 20, and status as PetStatus', () => {
    const limit = parameter(operation('/pets', 'get'), 'limit');
    const status = parameter(operation('/pets', 'get'), 'status');

    expect(limit).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
    expect(status?.schema).toEqual({ $ref: '#/components/schemas/PetStatus' });
  });

  it('marks getPet deprecated, naming the removal date and the replacement', () => {
    const getPet = operation('/pets/{petId}', 'get');

    expect(getPet.deprecated).toBe(true);
    expect(getPet.description).toContain('5 December 2030');
    expect(getPet.description).toContain('GET /pets');
    expect(Object.keys(response(getPet, '200').headers ?? {})).toEqual(
      expect.arrayContaining(['Sunset', 'Deprecation']),
    );
  });

  it('declares the responses the service adds, with their headers', () => {
    expect(Object.keys(operation('/pets', 'get').responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(Object.keys(operation('/pets', 'post').responses).sort()).toEqual([
      '201',
      '400',
      '401',
      '409',
      '413',
      '415',
      '422',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(Object.keys(operation('/pets/{petId}', 'get').responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '404',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(operation('/pets', 'post').parameters).toEqual([
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
    ]);
    expect(response(operation('/pets', 'get'), '200').headers?.Link).toBeDefined();
    expect(response(operation('/pets', 'post'), '201').headers?.Location).toBeDefined();
    expect(response(operation('/pets', 'get'), '401').headers?.['WWW-Authenticate']).toBeDefined();
    expect(response(operation('/pets', 'get'), '503').headers?.['Retry-After']).toBeDefined();
    expect(response(operation('/pets', 'get'), '429').headers?.['Retry-After']).toBeDefined();
    expect(response(operation('/pets', 'post'), '409').headers?.['Retry-After']).toBeDefined();
  });

  it('declares the RateLimit fields on every response a keyed request can get, required on 429s', () => {
    const operations = [
      document.paths['/pets']?.get,
      document.paths['/pets']?.post,
      document.paths['/pets/{petId}']?.get,
    ];
    const required = (header: object | undefined) =>
      header !== undefined && 'required' in header ? header.required : undefined;
    for (const operation of operations) {
      for (const [status, response] of Object.entries(operation?.responses ?? {})) {
        const headers = response === undefined || '$ref' in response ? {} : (response.headers ?? {});
        // Node answers 431 before any key is read.
        const expected = status === '431' ? undefined : status === '429';
        expect([status, required(headers.RateLimit), required(headers['RateLimit-Policy'])]).toEqual([
          status,
          expected,
          expected,
        ]);
      }
    }
    expect(operations.filter((operation) => operation === undefined)).toEqual([]);
  });

  it('is served as YAML too, with the same content', async () => {
    const response = await fetch(`${server.url}/openapi.yaml`);

    expect(response.status).toBe(200);
    expect(parse(await response.text())).toEqual(document);
  });

  it('has Swagger UI at /docs', async () => {
    const response = await fetch(`${server.url}/docs`);

    expect(response.status).toBe(200);
    expect(await response.text()).toContain('swagger-ui');
  });
});

/** The root fields every OpenAPI document has; the tests check the rest. */
function isOpenAPIObject(value: unknown): value is OpenAPIObject {
  return (
    typeof value === 'object' &&
    value !== null &&
    'openapi' in value &&
    typeof value.openapi === 'string' &&
    'info' in value &&
    typeof value.info === 'object' &&
    value.info !== null &&
    'paths' in value &&
    typeof value.paths === 'object' &&
    value.paths !== null
  );
}

function pathItem(path: string): PathItemObject {
  return document.paths[path] ?? fail(`the document has no path ${path}`);
}

function operation(path: string, method: 'get' | 'post'): OperationObject {
  return pathItem(path)[method] ?? fail(`the document has no ${method} ${path}`);
}

function response(operation: OperationObject, status: string): ResponseObject {
  const found = operation.responses[status] ?? fail(`${operation.operationId} has no ${status} response`);
  return '$ref' in found ? fail(`${operation.operationId}'s ${status} response is a $ref`) : found;
}

function parameter(operation: OperationObject, name: string): ParameterObject | undefined {
  return operation.parameters?.filter(isParameter).find((found) => found.name === name);
}

function isParameter(candidate: ParameterObject | ReferenceObject): candidate is ParameterObject {
  return !('$ref' in candidate);
}

function schema(name: string): SchemaObject {
  const found = document.components?.schemas?.[name] ?? fail(`the document has no schema ${name}`);
  return '$ref' in found ? fail(`the schema ${name} is a $ref`) : found;
}

function fail(message: string): never {
  throw new Error(message);
}
