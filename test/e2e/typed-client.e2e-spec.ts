import createClient from 'openapi-fetch';
import type { paths } from '../../packages/client/src/petstore-api.js';
import { TEST_API_KEY, useService } from '../support/server.js';

// The client a consumer generates from docs/openapi.json (openapi-typescript + openapi-fetch). A
// change of the document that breaks such clients breaks the type check of this file.
const service = useService();

function client(key = TEST_API_KEY) {
  return createClient<paths>({ baseUrl: `${service.server.url}/v1`, headers: { Authorization: `Bearer ${key}` } });
}

describe('a typed client generated from the document', () => {
  it('createPet: adds a pet and reads the typed Pet back', async () => {
    const { data, error, response } = await client().POST('/pets', {
      body: { name: 'Rex', categoryId: 7, status: 'pending' },
    });

    expect(error).toBeUndefined();
    expect(response.status).toBe(201);
    expect(data).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 7, status: 'pending' });
  });

  it('createPet: gets the typed Error body for invalid input', async () => {
    const { data, error } = await client().POST('/pets', { body: { name: ' ', categoryId: 1 } });

    expect(data).toBeUndefined();
    expect(error).toEqual({ code: 'invalid_request', message: expect.stringContaining('name'), status: 400 });
  });

  it('listPets: lists with typed query parameters', async () => {
    await client().POST('/pets', { body: { name: 'Sold one', categoryId: 1, status: 'sold' } });

    const { data, response } = await client().GET('/pets', { params: { query: { status: 'sold', limit: 10 } } });

    expect(response.status).toBe(200);
    expect(data?.map((pet) => pet.status)).toEqual(['sold']);
  });

  it('getPet: fetches by id, and reads the deprecation headers', async () => {
    const created = await client().POST('/pets', { body: { name: 'Tom', categoryId: 2 } });
    const id = created.data?.id ?? 0;

    const { data, response } = await client().GET('/pets/{petId}', { params: { path: { petId: id } } });

    expect(data).toEqual({ id, name: 'Tom', categoryId: 2, status: 'available' });
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });

  it('getPet: gets the typed 404 and 401 Error bodies', async () => {
    expect((await client().GET('/pets/{petId}', { params: { path: { petId: 424242 } } })).error?.code).toBe(
      'not_found',
    );
    expect((await client('wrong').GET('/pets/{petId}', { params: { path: { petId: 1 } } })).error?.code).toBe(
      'unauthorized',
    );
  });
});
