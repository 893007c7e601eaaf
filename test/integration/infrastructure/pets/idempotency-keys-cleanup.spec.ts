import { expect, jest } from '@jest/globals';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  CLEANUP_EVERY_MS,
  IdempotencyKeysCleanup,
} from '../../../../src/infrastructure/pets/idempotency-keys-cleanup.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  await database.reset();
});

/** `expired` records past their retention and `live` ones within it, each pointing at a pet. */
async function records(expired: number, live: number): Promise<void> {
  await database.dataSource.query(`INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available')`);
  await database.dataSource.query(
    `INSERT INTO idempotency_keys (caller, key, fingerprint, pet_id, expires_at)
     SELECT 'caller-a', 'key-' || n, 'body', 1, CASE WHEN n <= $1 THEN now() - interval '1 second' ELSE now() + interval '1 day' END
     FROM generate_series(1, $2::int) n`,
    [expired, expired + live],
  );
}

async function keysLeft(): Promise<{ expired: number; live: number }> {
  const [row] = await database.dataSource.query<{ expired: number; live: number }[]>(
    `SELECT count(*) FILTER (WHERE expires_at <= now())::int AS expired, count(*) FILTER (WHERE expires_at > now())::int AS live
     FROM idempotency_keys`,
  );
  return { expired: Number(row?.expired), live: Number(row?.live) };
}

function cleanup(options: { batchSize?: number; log?: (line: string) => void } = {}) {
  return new IdempotencyKeysCleanup(database.dataSource, {
    batchSize: options.batchSize ?? 10,
    log: options.log ?? ((line) => console.warn(line)),
  });
}

describe('IdempotencyKeysCleanup', () => {
  it('removes every expired record, in batches, and keeps the live ones', async () => {
    await records(25, 7);

    const removed = await cleanup({ batchSize: 10 }).sweep();

    expect(removed).toBe(25);
    expect(await keysLeft()).toEqual({ expired: 0, live: 7 });
  });

  it('passes over an expired record that a create is taking over, instead of waiting for it', async () => {
    await records(2, 0);
    const runner = database.dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await runner.query(`UPDATE idempotency_keys SET expires_at = now() + interval '1 day' WHERE key = 'key-1'`);

      expect(await cleanup().sweep()).toBe(1);

      await runner.commitTransaction();
      expect(await keysLeft()).toEqual({ expired: 0, live: 1 });
    } finally {
      await runner.release();
    }
  });

  it("sweeps on @nestjs/schedule's interval in an app, and no more once the app has closed", async () => {
    // Only the intervals are faked: the database's sockets and timeouts run as they do.
    jest.useFakeTimers({
      doNotFake: [
        'setTimeout',
        'clearTimeout',
        'setImmediate',
        'nextTick',
        'queueMicrotask',
        'Date',
        'performance',
        'hrtime',
      ],
    });
    const app = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot()],
      providers: [{ provide: IdempotencyKeysCleanup, useValue: cleanup() }],
    }).compile();
    let open = true;
    try {
      await app.init();
      await records(3, 1);

      jest.advanceTimersByTime(CLEANUP_EVERY_MS - 1);
      expect(await keysLeft()).toEqual({ expired: 3, live: 1 });
      jest.advanceTimersByTime(1);
      while ((await keysLeft()).expired > 0) await new Promise((resolve) => setTimeout(resolve, 10));

      await app.close();
      open = false;
      await database.dataSource.query(
        `INSERT INTO idempotency_keys (caller, key, fingerprint, pet_id, expires_at) VALUES ('caller-b', 'late', 'body', 1, now() - interval '1 second')`,
      );
      expect(jest.getTimerCount()).toBe(0);
      jest.advanceTimersByTime(10 * CLEANUP_EVERY_MS);
      expect(await keysLeft()).toEqual({ expired: 1, live: 1 });
    } finally {
      if (open) await app.close();
      jest.useRealTimers();
    }
  });
});
