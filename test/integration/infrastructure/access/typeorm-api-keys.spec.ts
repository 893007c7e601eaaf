import { createHash } from 'node:crypto';
import { expect } from '@jest/globals';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { ApiKeyRecord } from '../../../../src/infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from '../../../../src/infrastructure/access/typeorm-api-keys.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { startTcpProxy } from '../../../support/tcp-proxy.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';

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

const noCache = { seconds: 0, maxEntries: 10 };

describe('TypeOrmApiKeys', () => {
  it('issues random URL-safe keys of 256 bits, identified by their SHA-256', async () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache);

    const first = await keys.issue('ci');
    const second = await keys.issue('ci');

    expect(first.key).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);
    expect(second.key).not.toBe(first.key);
    expect(await keys.identify(first.key)).toBe(createHash('sha256').update(first.key).digest('hex'));
    expect(await keys.identify(`${first.key}x`)).toBeNull();
  });

  it('stores only the SHA-256 of a key, never the key', async () => {
    const { key } = await new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache).issue('ci');

    const rows: { key_hash: Buffer }[] = await database.dataSource.query('SELECT * FROM api_keys');
    expect(rows).toHaveLength(1);
    expect(rows[0]?.key_hash.equals(createHash('sha256').update(key).digest())).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(key.slice(4));
  });

  it('lists id, label, created and revoked times', async () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache);
    await keys.issue('ci');
    await keys.issue('laptop');
    await keys.revoke(1);

    const listed = await keys.list();

    expect(listed).toEqual([
      { id: 1, label: 'ci', createdAt: expect.any(Date), revokedAt: expect.any(Date) },
      { id: 2, label: 'laptop', createdAt: expect.any(Date), revokedAt: null },
    ]);
  });

  it('revokes a key once, and tells an unknown id apart', async () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache);
    const { id, key } = await keys.issue('ci');

    expect(await keys.revoke(id)).toBe('revoked');
    expect(await keys.identify(key)).toBeNull();
    expect(await keys.revoke(id)).toBe('already_revoked');
    expect(await keys.revoke(999)).toBe('not_found');
  });

  it('accepts the keys of API_KEYS beside stored ones', async () => {
    const keys = new TypeOrmApiKeys(
      database.dataSource.getRepository(ApiKeyRecord),
      ['from-env-1', 'from-env-2'],
      noCache,
    );

    expect(await keys.identify('from-env-2')).not.toBeNull();
    expect(await keys.identify('from-env-3')).toBeNull();
    expect(await keys.hasUsableKey()).toBe(true);
  });

  it('recognises the keys of API_KEYS without the store, by their SHA-256, and nothing near them', () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), ['from-env-1'], noCache);

    expect(keys.recognise('from-env-1')).toBe(createHash('sha256').update('from-env-1').digest('hex'));
    expect(keys.recognise('from-env-')).toBeNull();
    expect(keys.recognise('from-env-10')).toBeNull();
    expect(keys.recognise('FROM-ENV-1')).toBeNull();
  });

  it('knows when no key would be accepted', async () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache);
    expect(await keys.hasUsableKey()).toBe(false);

    const { id } = await keys.issue('first run');
    expect(await keys.hasUsableKey()).toBe(true);

    await keys.revoke(id);
    expect(await keys.hasUsableKey()).toBe(false);
  });

  it('issues a first-run key only when none would be accepted', async () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache);

    const first = await keys.issueIfNone('first run');
    expect(first).toMatchObject({ id: 1, label: 'first run', key: expect.stringMatching(/^psk_/) });
    expect(await keys.identify(first?.key ?? '')).not.toBeNull();
    expect(await keys.issueIfNone('first run')).toBeNull();

    await keys.revoke(1);
    expect(await keys.issueIfNone('first run')).toMatchObject({ id: 2 });
    expect(
      await new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), ['from-env'], noCache).issueIfNone(
        'first run',
      ),
    ).toBeNull();
  });

  it('of instances starting at once on an empty store, exactly one issues the first-run key', async () => {
    // Each "instance" has a pool of its own, as separate processes would.
    const instances = await Promise.all(
      Array.from({ length: 6 }, async () =>
        new DataSource(dataSourceOptions(database.url, database.schema)).initialize(),
      ),
    );
    try {
      for (let round = 0; round < 10; round++) {
        await database.reset();
        const issued = await Promise.all(
          instances.map((ds) =>
            new TypeOrmApiKeys(ds.getRepository(ApiKeyRecord), [], noCache).issueIfNone('first run'),
          ),
        );

        expect(issued.filter((key) => key !== null)).toHaveLength(1);
        expect(await database.dataSource.query('SELECT count(*)::int AS n FROM api_keys')).toEqual([{ n: 1 }]);
      }
    } finally {
      await Promise.all(instances.map((ds) => ds.destroy()));
    }
  });

  it('verifies a recently seen key without a database round trip', async () => {
    const proxy = await startTcpProxy(database.url);
    const viaProxy = new DataSource(dataSourceOptions(proxy.url, database.schema));
    await viaProxy.initialize();
    try {
      const keys = new TypeOrmApiKeys(viaProxy.getRepository(ApiKeyRecord), [], { seconds: 60, maxEntries: 10 });
      const { key } = await new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], noCache).issue(
        'ci',
      );
      expect(await keys.identify(key)).not.toBeNull();

      await proxy.cut();

      expect(await keys.identify(key)).not.toBeNull();
      await expect(keys.identify('never seen')).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await viaProxy.destroy();
      await proxy.close();
    }
  });

  it('stops accepting a key revoked by another instance once its cached verdict is older than the cache time', async () => {
    let now = 1_000_000;
    const clock = () => now;
    const instanceA = new TypeOrmApiKeys(
      database.dataSource.getRepository(ApiKeyRecord),
      [],
      { seconds: 5, maxEntries: 10 },
      clock,
    );
    const instanceB = new TypeOrmApiKeys(
      database.dataSource.getRepository(ApiKeyRecord),
      [],
      { seconds: 5, maxEntries: 10 },
      clock,
    );
    const { id, key } = await instanceA.issue('ci');
    expect(await instanceA.identify(key)).not.toBeNull();

    await instanceB.revoke(id);

    expect(await instanceB.identify(key)).toBeNull();
    now += 4_900;
    expect(await instanceA.identify(key)).not.toBeNull();
    now += 200;
    expect(await instanceA.identify(key)).toBeNull();
  });

  it('remembers only valid keys, at most maxEntries: random wrong keys cannot push a valid one out', async () => {
    const keys = new TypeOrmApiKeys(database.dataSource.getRepository(ApiKeyRecord), [], {
      seconds: 60,
      maxEntries: 3,
    });
    const { key } = await keys.issue('ci');
    expect(keys.recognise(key)).toBeNull();
    await keys.identify(key);

    for (let i = 0; i < 10; i++) await keys.identify(`random-${i}`);

    expect(keys.recognise(key)).not.toBeNull();
    expect(keys.recognise('random-9')).toBeNull();
    const others = [await keys.issue('b'), await keys.issue('c'), await keys.issue('d')];
    for (const other of others) await keys.identify(other.key);
    expect(keys.recognise(key)).toBeNull();
  });
});
