import { readPets } from '../support/http.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { authorized, json, startServer } from '../support/server.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe('cursors without CURSOR_SECRET', () => {
  it('are good on every instance and after a restart: the signing secret is kept in the database', async () => {
    const first = await startServer(database, { cursorSecret: null });
    const second = await startServer(database, { cursorSecret: null });
    let next: string;
    try {
      for (let i = 0; i < 3; i++)
        await fetch(`${first.url}/v1/pets`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ name: `pet ${i}`, categoryId: 1 }),
        });
      next =
        /^<([^>]+)>; rel="next"$/.exec(
          (await fetch(`${first.url}/v1/pets?limit=1`, { headers: authorized })).headers.get('link') ?? '',
        )?.[1] ?? '';

      const elsewhere = await fetch(`${second.url}${next}`, { headers: authorized });

      expect(next).toContain('cursor=');
      expect(elsewhere.status).toBe(200);
      expect((await readPets(elsewhere)).map((pet) => pet.name)).toEqual(['pet 1']);
    } finally {
      await first.close();
      await second.close();
    }
    const restarted = await startServer(database, { cursorSecret: null });
    try {
      expect((await fetch(`${restarted.url}${next}`, { headers: authorized })).status).toBe(200);
    } finally {
      await restarted.close();
    }
  });
});
