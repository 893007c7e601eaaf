import { toPetResponse } from '../../../../../src/interface/http/pets/pet.dto.js';

describe('toPetResponse', () => {
  it('gives the four fields of the Pet schema and nothing else the pet may carry', () => {
    const stored = { id: 7, name: 'Rex', categoryId: 1, status: 'sold' as const, createdAt: '2026-11-27' };

    expect(toPetResponse(stored)).toStrictEqual({ id: 7, name: 'Rex', categoryId: 1, status: 'sold' });
  });
});
