import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { MAX_PET_ID, type PetStatus } from '../../../domain/pets/pet.js';
import { ApiError } from '../platform/api-error.js';

export type CursorPosition = { afterId: number; status?: PetStatus };

/**
 * The opaque `cursor` of keyset paging: the last id of a page and the status filter it was issued
 * for, signed with HMAC-SHA256 so that a cursor we did not issue (forged, tampered or truncated)
 * is refused with a 400 instead of silently skipping pets.
 */
export class CursorCodec {
  private readonly key: KeyObject;
  /**
   * Cursors issued lately, by payload: the next page of a common query (of the first page above
   * all) is the same for every client that asks, and an HMAC costs more than the rest of the
   * link. They hold nothing secret: each cursor and its signature go out to clients.
   */
  private readonly issued = new LRUCache<string, { cursor: string; signature: Buffer }>({ max: 1000 });

  constructor(secret: string) {
    this.key = createSecretKey(Buffer.from(secret));
  }

  encode({ afterId, status }: CursorPosition): string {
    const payload = `1.${afterId}.${status ?? ''}`;
    let issued = this.issued.get(payload);
    if (issued === undefined) {
      const signature = this.sign(payload);
      issued = {
        cursor: `${Buffer.from(payload).toString('base64url')}.${signature.toString('base64url')}`,
        signature,
      };
      this.issued.set(payload, issued);
    }
    return issued.cursor;
  }

  /** The id to continue after; throws a 400 ApiError for a cursor not issued for this query. */
  decode(cursor: string, status: PetStatus | undefined): number {
    const [encodedPayload = '', encodedSignature = '', ...rest] = cursor.split('.');
    const payload = Buffer.from(encodedPayload, 'base64url').toString();
    const signature = Buffer.from(encodedSignature, 'base64url');
    // Checked against the signature issued, or computed afresh: a cursor sent in is never remembered.
    const expected = this.issued.get(payload)?.signature ?? this.sign(payload);
    if (rest.length > 0 || signature.length !== expected.length || !timingSafeEqual(signature, expected)) {
      throw new ApiError(400, 'cursor is not one this service issued: start again without cursor');
    }
    const [, afterId = '', cursorStatus = ''] = payload.split('.');
    if (cursorStatus !== (status ?? '')) {
      throw new ApiError(400, 'cursor was issued for another status filter: repeat the status of the previous page');
    }
    const id = Number(afterId);
    if (!Number.isSafeInteger(id) || id < 1 || id > MAX_PET_ID) throw new ApiError(400, 'cursor is not valid');
    return id;
  }

  private sign(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, 16);
  }
}
