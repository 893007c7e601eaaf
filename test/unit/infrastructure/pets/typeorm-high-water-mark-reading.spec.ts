import {
  cacheWarning,
  guardProblem,
  PETS_TRIGGERS,
} from '../../../../src/infrastructure/pets/typeorm-high-water-mark-reading.js';

const ALWAYS = PETS_TRIGGERS.map((name) => `${name}=A`);

describe('guardProblem: what stops the store vouching for its ids', () => {
  it('finds nothing while both pets triggers fire ALWAYS and the sequence is at or past the ids stored', () => {
    expect(guardProblem({ upToId: 5, maxId: 5, cache: 1, triggers: ALWAYS })).toBeNull();
    expect(guardProblem({ upToId: 9, maxId: 5, cache: 50, triggers: [...ALWAYS, 'audit=O'] })).toBeNull();
  });

  it.each([
    ['disabled', 'D', 'pets_refuse_id is disabled'],
    ['firing for origin sessions only', 'O', 'pets_refuse_id does not fire ALWAYS'],
    ['firing for replica sessions only', 'R', 'pets_refuse_id does not fire ALWAYS'],
  ])('names a trigger %s, and what to run', (_, state, said) => {
    const problem = guardProblem({
      upToId: 5,
      maxId: 5,
      cache: 1,
      triggers: ['pets_note_id_floor=A', `pets_refuse_id=${state}`],
    });

    expect(problem).toContain(said);
    expect(problem).toContain('ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_refuse_id');
  });

  it('names a trigger that is missing, and the command that makes it', () => {
    expect(guardProblem({ upToId: 5, maxId: 5, cache: 1, triggers: ['pets_refuse_id=A'] })).toContain(
      'pets_note_id_floor is missing',
    );
  });

  it('names a sequence behind the ids stored, and the setval that mends it', () => {
    expect(guardProblem({ upToId: 4, maxId: 5, cache: 1, triggers: ALWAYS })).toBe(
      "the sequence pets_id_seq (at 4) is behind ids already stored (up to 5): run SELECT setval('pets_id_seq', (SELECT max(id) FROM pets))",
    );
  });
});

describe('cacheWarning', () => {
  it('says nothing of a sequence that caches no ids, and names a cache of more', () => {
    expect(cacheWarning(1)).toBeNull();
    expect(cacheWarning(2)).toContain('caches 2 ids per session');
  });
});
