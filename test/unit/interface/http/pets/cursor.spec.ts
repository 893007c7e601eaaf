import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';
import { CursorCodec } from '../../../../../src/interface/http/pets/cursor.js';

const codec = new CursorCodec('secret');

function rejection(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('the cursor was accepted');
}

describe('CursorCodec', () => {
  it('round-trips the position it issued, with and without a status', () => {
    expect(codec.decode(codec.encode({ afterId: 42 }), undefined)).toBe(42);
    expect(codec.decode(codec.encode({ afterId: Number.MAX_SAFE_INTEGER, status: 'sold' }), 'sold')).toBe(
      Number.MAX_SAFE_INTEGER,
    );
  });

  it('is opaque: the cursor does not show the id in clear', () => {
    expect(codec.encode({ afterId: 123456 })).not.toContain('123456');
  });

  it.each([[''], ['abc'], ['a.b'], ['x'.repeat(500)], ['MS4xLg.AAAAAAAAAAAAAAAAAAAAAA']])(
    'refuses a cursor it did not issue: %j',
    (cursor) => {
      expect(rejection(() => codec.decode(cursor, undefined))).toMatchObject({ status: 400 });
    },
  );

  it('refuses a cursor it issued with anything appended after the signature', () => {
    expect(rejection(() => codec.decode(`${codec.encode({ afterId: 5 })}.x`, undefined)).getStatus()).toBe(400);
  });

  it('accepts the smallest pet id, and refuses a signed position that no pet can have', () => {
    expect(codec.decode(codec.encode({ afterId: 1 }), undefined)).toBe(1);
    for (const afterId of [0, -1, Number.MAX_SAFE_INTEGER + 1, Number.NaN]) {
      const error = rejection(() => codec.decode(codec.encode({ afterId }), undefined));
      expect([error.getStatus(), error.message]).toEqual([400, 'cursor is not valid']);
    }
  });

  it('refuses a cursor whose payload was changed', () => {
    const [, signature] = codec.encode({ afterId: 5 }).split('.');
    const forged = `${Buffer.from('1.500.').toString('base64url')}.${signature}`;

    expect(rejection(() => codec.decode(forged, undefined)).message).toMatch(/cursor/);
  });

  it('issues the same cursor for the same position, and refuses a wrong signature on a payload it issued', () => {
    const cursor = codec.encode({ afterId: 77, status: 'pending' });
    expect(codec.encode({ afterId: 77, status: 'pending' })).toBe(cursor);

    const [payload = '', signature = ''] = cursor.split('.');
    const flipped = Buffer.from(signature, 'base64url');
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(rejection(() => codec.decode(`${payload}.${flipped.toString('base64url')}`, 'pending')).getStatus()).toBe(
      400,
    );
    expect(rejection(() => codec.decode(`${payload}.`, 'pending')).getStatus()).toBe(400);
    expect(codec.decode(cursor, 'pending')).toBe(77);
  });

  it('refuses a cursor signed with another secret', () => {
    expect(rejection(() => codec.decode(new CursorCodec('other').encode({ afterId: 5 }), undefined)).getStatus()).toBe(
      400,
    );
  });

  it('refuses a cursor used with another status filter', () => {
    const cursor = codec.encode({ afterId: 5, status: 'sold' });

    expect(rejection(() => codec.decode(cursor, 'available')).message).toMatch(/status/);
    expect(rejection(() => codec.decode(cursor, undefined)).message).toMatch(/status/);
  });
});
