import {
  StartupError,
  waitForDatabase,
} from '../../../../../src/infrastructure/platform/database/wait-for-database.js';
import { findFreePort } from '../../../../support/free-port.js';
import { openTestDatabase, type TestDatabase } from '../../../../support/database.js';

/** A clock whose sleeps pass at once and move time on by what they slept. */
function fakeClock() {
  const slept: number[] = [];
  let now = 0;
  return {
    slept,
    clock: {
      now: () => now,
      sleep: (ms: number) => {
        slept.push(ms, (now += ms));
        return Promise.resolve();
      },
    },
  };
}

describe('waitForDatabase', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  it('retries a database that does not answer with back-off from 0.5 s to 5 s, then gives up at the deadline naming the cause', async () => {
    const { slept, clock } = fakeClock();
    const lines: string[] = [];
    const url = `postgres://u:secret-pw@127.0.0.1:${await findFreePort()}/db`;

    const failure = await waitForDatabase(url, 20, (line) => lines.push(line), clock).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(StartupError);
    expect(String(failure)).toMatch(
      /did not answer within 20 s \(ECONNREFUSED\): start PostgreSQL, fix DATABASE_URL, or raise DATABASE_WAIT_SECONDS/,
    );
    expect(slept.filter((_, index) => index % 2 === 0)).toEqual([500, 1000, 2000, 4000, 5000, 5000, 2500]);
    expect(lines).toHaveLength(7);
    expect(lines.join('\n') + String(failure)).not.toContain('secret-pw');
  });

  it('returns at once for a database that answers', async () => {
    const { slept, clock } = fakeClock();

    await waitForDatabase(database.url, 20, () => undefined, clock);

    expect(slept).toEqual([]);
  });

  it('does not wait for a server that answers but refuses: a missing database is reported at once', async () => {
    const { slept, clock } = fakeClock();
    const url = new URL(database.url);
    url.pathname = '/no_such_database_here';

    await expect(waitForDatabase(url.toString(), 20, () => undefined, clock)).rejects.toThrow(
      /no_such_database_here does not exist: create it/,
    );
    expect(slept).toEqual([]);
  });
});
