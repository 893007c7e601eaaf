/** The version segment every operation's path starts with (the spec's base addresses end in it). */
export const API_PREFIX = '/v1';
