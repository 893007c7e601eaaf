export {
  DEFAULT_RETRY,
  PetstoreClient,
  type CallOptions,
  type CreateOptions,
  type DeprecationNotice,
  type ListOptions,
  type NewPet,
  type Pet,
  type PetStatus,
  type PetstoreClientOptions,
  type RetryOptions,
} from './client.js';
export { PetstoreError, type ErrorCode } from './errors.js';
export type { components, operations, paths } from './petstore-api.js';
