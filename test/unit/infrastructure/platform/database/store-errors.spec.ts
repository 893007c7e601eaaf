import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';
import {
  isUnavailable,
  translateStoreErrors,
} from '../../../../../src/infrastructure/platform/database/store-errors.js';

const withCode = (code: string, message = 'from the driver') => Object.assign(new Error(message), { code });

describe('isUnavailable', () => {
  it.each([
    ['08006', 'connection failure'],
    ['53300', 'too many connections'],
    ['57P01', 'admin shutdown'],
    ['57014', 'statement timeout'],
    ['55P03', 'lock timeout'],
    ['25006', 'read-only transaction: the server is a standby after a failover'],
    ['ECONNREFUSED', 'a socket error'],
  ])('takes SQLSTATE or code %s (%s) for a store that does not answer', (code) => {
    expect(isUnavailable(withCode(code))).toBe(true);
  });

  it.each([
    ['42601', 'a syntax error'],
    ['23505', 'a unique violation'],
    ['25P02', 'a transaction already aborted'],
  ])('takes SQLSTATE %s (%s) for a bug, not an outage', (code) => {
    expect(isUnavailable(withCode(code, 'Connection terminated'))).toBe(false);
  });

  it('takes 55000 for an outage only when it says the server reached is in recovery (a standby, mid-failover)', () => {
    // PostgreSQL's words when pg_current_wal_lsn() runs on a standby.
    expect(isUnavailable(withCode('55000', 'recovery is in progress'))).toBe(true);
    expect(isUnavailable(withCode('55000', 'cannot drop the currently open database'))).toBe(false);
    expect(isUnavailable(withCode('55006', 'recovery is in progress'))).toBe(false);
  });

  it('knows the driver messages that carry no code', () => {
    expect(isUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    // TypeORM's, when a failover ended the connection under a transaction.
    expect(
      isUnavailable(
        new Error(
          'Database connection provided by a query runner was already released, cannot continue to use its querying methods anymore.',
        ),
      ),
    ).toBe(true);
    expect(isUnavailable(new Error('Query runner already released. Cannot run queries anymore.'))).toBe(true);
    expect(isUnavailable(new Error('something else'))).toBe(false);
    expect(isUnavailable('Connection terminated')).toBe(false);
  });
});

describe('translateStoreErrors', () => {
  it('turns an outage into StoreUnavailableError, keeping the cause, and lets anything else through', async () => {
    const outage = withCode('25006');
    const bug = withCode('42601');

    await expect(translateStoreErrors(() => Promise.reject(outage))).rejects.toEqual(
      expect.objectContaining({ name: 'StoreUnavailableError', cause: outage }),
    );
    await expect(translateStoreErrors(() => Promise.reject(bug))).rejects.toBe(bug);
    await expect(translateStoreErrors(() => Promise.resolve(7))).resolves.toBe(7);
    await expect(translateStoreErrors(() => Promise.reject(outage))).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
