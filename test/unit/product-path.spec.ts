import { ENDPOINTS, productPath } from '../../scripts/product-path.mjs';

// docs/contributing.md: a newcomer changing an endpoint finds its product in a handful of files.
describe('each endpoint’s product path (scripts/product-path.mjs)', () => {
  it.each(['listPets', 'createPet', 'getPet'] as const)(
    '%s runs through at most 8 files of the product',
    (endpoint) => {
      const files = productPath(endpoint);

      expect(files.length).toBeLessThanOrEqual(8);
      // The path is traced, not listed: the controller, the endpoint's use case and the pets adapter are on it.
      expect(files).toEqual(
        expect.arrayContaining([
          'src/interface/http/pets/pets.controller.ts',
          ENDPOINTS[endpoint].useCase,
          'src/infrastructure/pets/typeorm-pet-repository.ts',
        ]),
      );
    },
  );

  it('follows a list into the settled marks and a keyed create into its transaction, and no further', () => {
    expect(productPath('listPets')).toContain('src/infrastructure/pets/typeorm-settled-marks.ts');
    expect(productPath('listPets')).not.toContain('src/application/pets/create-pet.ts');
    expect(productPath('createPet')).toContain('src/infrastructure/pets/typeorm-pet-transactions.ts');
    expect(productPath('createPet')).not.toContain('src/interface/http/pets/cursor.ts');
    expect(productPath('getPet')).toContain('src/interface/http/pets/deprecation.ts');
  });
});
