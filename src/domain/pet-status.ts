export const PET_STATUSES = ['available', 'pending', 'sold'] as const;

export type PetStatus = (typeof PET_STATUSES)[number];

export const DEFAULT_PET_STATUS: PetStatus = 'available';

export function isPetStatus(value: unknown): value is PetStatus {
  return typeof value === 'string' && (PET_STATUSES as readonly string[]).includes(value);
}
