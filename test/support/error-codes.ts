/**
 * The wire codes of the decisions' table, written out here rather than imported from the service,
 * so that a test comparing answers with them can fail when the service's own table is wrong.
 */
export const ERROR_CODES = new Map<number, string>([
  [400, 'invalid_request'],
  [401, 'unauthorized'],
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [409, 'idempotency_conflict'],
  [413, 'payload_too_large'],
  [415, 'unsupported_media_type'],
  [422, 'idempotency_key_reused'],
  [429, 'rate_limited'],
  [500, 'internal_error'],
  [503, 'unavailable'],
]);
