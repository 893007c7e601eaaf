import type { OpenAPIObject } from '@nestjs/swagger';
import { parse } from 'yaml';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { startServer, type TestServer } from '../support/server.js';

let database: TestDatabase;
let server: TestServer;
// A parsed JSON document walked by path: typing every level would only restate the assertions.
let document: any; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  database = await openTestDatabase();
  server = await startServer(database);
  document = await (await fetch(`${server.url}/openapi.json`)).json();
});
afterAll(async () => {
  await server?.close();
  await database?.close();
});

describe('the OpenAPI document', () => {
  it('is version 1.0.0 with the production and staging servers from configuration', () => {
    expect(document.openapi).toMatch(/^3\./);
    expect(document.info.version).toBe('1.0.0');
    expect(document.servers.map((server: { url: string }) => server.url)).toEqual([
      'https://petstore.example.com/v1',
      'https://staging.petstore.example.com/v1',
    ]);
  });

  it('has exactly the three operations, relative to the /v1 servers, with the spec operation ids', () => {
    expect(Object.keys(document.paths).sort()).toEqual(['/pets', '/pets/{petId}']);
    expect(Object.keys(document.paths['/pets']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(document.paths['/pets/{petId}'])).toEqual(['get']);
    expect(document.paths['/pets'].get.operationId).toBe('listPets');
    expect(document.paths['/pets'].post.operationId).toBe('createPet');
    expect(document.paths['/pets/{petId}'].get.operationId).toBe('getPet');
  });

  it('names the schemas as the spec does', () => {
    expect(Object.keys(document.components.schemas).sort()).toEqual(['Error', 'NewPet', 'Pet', 'PetStatus', 'Pets']);
    expect(document.components.schemas.PetStatus).toMatchObject({
      type: 'string',
      enum: ['available', 'pending', 'sold'],
    });
    expect([...document.components.schemas.NewPet.required].sort()).toEqual(['categoryId', 'name']);
    expect([...document.components.schemas.Pet.required].sort()).toEqual(['categoryId', 'id', 'name', 'status']);
    expect(document.components.schemas.Pet.properties.id).toMatchObject({ type: 'integer', format: 'int64' });
    expect([...document.components.schemas.Error.required].sort()).toEqual(['code', 'message', 'status']);
    expect(document.components.schemas.Pets).toEqual(
      expect.objectContaining({ type: 'array', items: { $ref: '#/components/schemas/Pet' } }),
    );
    expect(document.paths['/pets'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Pets',
    });
  });

  it('secures every operation with HTTP bearer', () => {
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const operation of [
      document.paths['/pets'].get,
      document.paths['/pets'].post,
      document.paths['/pets/{petId}'].get,
    ]) {
      expect(operation.security).toEqual([{ bearerAuth: [] }]);
      expect(operation.responses['401']).toBeDefined();
    }
  });

  it('declares limit as an integer from 1 to 100, default 20, and status as PetStatus', () => {
    const parameters = document.paths['/pets'].get.parameters;
    const limit = parameters.find((p: { name: string }) => p.name === 'limit');
    const status = parameters.find((p: { name: string }) => p.name === 'status');

    expect(limit).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
    expect(status.schema).toEqual({ $ref: '#/components/schemas/PetStatus' });
  });

  it('marks getPet deprecated, naming the removal date and the replacement', () => {
    const getPet = document.paths['/pets/{petId}'].get;

    expect(getPet.deprecated).toBe(true);
    expect(getPet.description).toContain('5 December 2030');
    expect(getPet.description).toContain('GET /pets');
    expect(Object.keys(getPet.responses['200'].headers)).toEqual(expect.arrayContaining(['Sunset', 'Deprecation']));
  });

  it('declares the responses the service adds, with their headers', () => {
    expect(Object.keys(document.paths['/pets'].get.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(Object.keys(document.paths['/pets'].post.responses).sort()).toEqual([
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
    expect(Object.keys(document.paths['/pets/{petId}'].get.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '404',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(document.paths['/pets'].post.parameters).toEqual([
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
    ]);
    expect(document.paths['/pets'].get.responses['200'].headers.Link).toBeDefined();
    expect(document.paths['/pets'].post.responses['201'].headers.Location).toBeDefined();
    expect(document.paths['/pets'].get.responses['401'].headers['WWW-Authenticate']).toBeDefined();
    expect(document.paths['/pets'].get.responses['503'].headers['Retry-After']).toBeDefined();
    expect(document.paths['/pets'].get.responses['429'].headers['Retry-After']).toBeDefined();
    expect(document.paths['/pets'].post.responses['409'].headers['Retry-After']).toBeDefined();
  });

  it('declares the RateLimit fields on every response a keyed request can get, required on 429s', () => {
    const spec: OpenAPIObject = document;
    const operations = [spec.paths['/pets']?.get, spec.paths['/pets']?.post, spec.paths['/pets/{petId}']?.get];
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
