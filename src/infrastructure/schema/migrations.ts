import { CreatePets1763769600000 } from './migrations/1763769600000-create-pets.js';
import { CreateIdempotencyKeys1763769700000 } from './migrations/1763769700000-create-idempotency-keys.js';
import { CreateApiKeys1763769800000 } from './migrations/1763769800000-create-api-keys.js';
import { IdempotencyKeepsThePet1795392000000 } from './migrations/1795392000000-idempotency-keeps-the-pet.js';
import { CreateServiceSecrets1795478400000 } from './migrations/1795478400000-create-service-secrets.js';
import { PetsIdsDrawnUnderLock1795737600000 } from './migrations/1795737600000-pets-ids-drawn-under-lock.js';
import { PetsIdsAboveTheFloor1796083200000 } from './migrations/1796083200000-pets-ids-above-the-floor.js';

/**
 * Every migration, oldest first. Listed, not loaded by a glob: TypeORM's glob loader imports
 * through a Function-built import() that Jest binds to the first test file of a run, and a glob
 * over dist/ would also run files left there by a migration since renamed. A migration that is
 * not listed here fails test/integration/infrastructure/schema/migrations.spec.ts.
 */
export const MIGRATIONS = [
  CreatePets1763769600000,
  CreateIdempotencyKeys1763769700000,
  CreateApiKeys1763769800000,
  IdempotencyKeepsThePet1795392000000,
  CreateServiceSecrets1795478400000,
  PetsIdsDrawnUnderLock1795737600000,
  PetsIdsAboveTheFloor1796083200000,
];
