import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import {
  MAX_COUNTED_ADDRESSES,
  RefusedRequestsLog,
} from '../../../../../src/interface/http/platform/refused-requests-log.js';

describe('RefusedRequestsLog', () => {
  it('counts refusals per client address and status', () => {
    const log = new RefusedRequestsLog();

    log.count('203.0.113.9', 401);
    log.count('203.0.113.9', 429);
    log.count('203.0.113.9', 429);
    log.count('198.51.100.7', 401);

    expect(log.take()).toEqual([
      { address: '203.0.113.9', statuses: { '401': 1, '429': 2 } },
      { address: '198.51.100.7', statuses: { '401': 1 } },
    ]);
  });

  it('starts afresh once the counts are taken', () => {
    const log = new RefusedRequestsLog();
    log.count('203.0.113.9', 401);
    log.take();

    log.count('198.51.100.7', 429);

    expect(log.take()).toEqual([{ address: '198.51.100.7', statuses: { '429': 1 } }]);
    expect(log.take()).toEqual([]);
  });

  it('writes one line per address, from its own context, on each flush and at shutdown', () => {
    const lines = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    try {
      const log = new RefusedRequestsLog();
      log.count('203.0.113.9', 401);
      log.count('198.51.100.7', 429);

      log.flush();
      log.count('203.0.113.9', 429);
      log.onApplicationShutdown();

      expect(lines.mock.calls).toEqual([
        [{ address: '203.0.113.9', statuses: { '401': 1 }, msg: 'requests refused' }],
        [{ address: '198.51.100.7', statuses: { '429': 1 }, msg: 'requests refused' }],
        [{ address: '203.0.113.9', statuses: { '429': 1 }, msg: 'requests refused' }],
      ]);
      expect(lines.mock.contexts.map((logger) => (logger as { context: string }).context)).toEqual(
        Array(3).fill('RefusedRequests'),
      );
    } finally {
      lines.mockRestore();
    }
  });

  it('counts addresses past the bound under "other", so that a flood from many addresses cannot grow it', () => {
    const log = new RefusedRequestsLog();
    for (let i = 0; i < MAX_COUNTED_ADDRESSES; i++) log.count(`10.0.${i >> 8}.${i & 255}`, 401);

    log.count('203.0.113.9', 401);
    log.count('203.0.113.10', 429);
    log.count('10.0.0.0', 401);

    const lines = log.take();
    expect(lines).toHaveLength(MAX_COUNTED_ADDRESSES + 1);
    expect(lines.at(-1)).toEqual({ address: 'other', statuses: { '401': 1, '429': 1 } });
    expect(lines[0]).toEqual({ address: '10.0.0.0', statuses: { '401': 2 } });
  });
});
