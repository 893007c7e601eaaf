import { setFlagsFromString } from 'node:v8';

/**
 * Imported first by main.ts, before the rest of the service is loaded. The heap's sizes cannot be
 * set from here: they are on the command line of `npm run start:prod` (see "Memory" in the README).
 *
 * V8's allocation-site pretenuring saw pg's row objects survive a young-generation collection
 * under load and began allocating them straight in the old generation, where each dies and waits
 * for a full collection: under the list benchmark the old generation grew by about 12 MB/s, to
 * over 100 MB. Without it, it stays at about 40 MB, with the same throughput. V8 reads the flag at
 * each collection, so setting it now takes effect (measured: Node calls flags changed after
 * start-up unsupported, and an unknown flag would only be ignored).
 */
setFlagsFromString('--no-allocation-site-pretenuring');
