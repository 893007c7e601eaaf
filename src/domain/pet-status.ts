// The pet's status lives in pet.ts. bench/baseline-common.ts still imports it from here; once it
// imports from pet.js, delete this file.
export { DEFAULT_PET_STATUS, isPetStatus, PET_STATUSES, type PetStatus } from './pet.js';
