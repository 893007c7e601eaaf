/**
 * answered: 2xx; failed: any other status; refused: the connection was refused (the service no
 * longer accepts: nothing was sent); dropped: the request was sent but the connection closed
 * before its answer (what a graceful stop must never do).
 */
export type LoadCounts = {
  answered: number;
  failed: number;
  refused: number;
  dropped: number;
  /** How each dropped request ended (the cause's code, or its message), for a failure to tell. */
  droppedBy: string[];
};

function causeCode(error: unknown): string {
  const cause: unknown = typeof error === 'object' && error !== null && 'cause' in error ? error.cause : null;
  if (typeof cause === 'object' && cause !== null && 'code' in cause) return String(cause.code);
  return cause instanceof Error ? cause.message : error instanceof Error ? error.message : 'unknown';
}

/**
 * Steady load for the shutdown tests: 16 clients creating and listing back to back over keep-alive
 * connections. After `stopping()` each client stops at its first refused connection; `finished`
 * then resolves with the counts.
 */
export function steadyLoad(
  baseUrl: string,
  headers: Record<string, string>,
): { stopping(): void; finished: Promise<LoadCounts> } {
  const counts: LoadCounts = { answered: 0, failed: 0, refused: 0, dropped: 0, droppedBy: [] };
  let stopping = false;
  const clients = Array.from({ length: 16 }, async (_, client) => {
    for (let i = 0; ; i++) {
      try {
        const response = await (client % 2 === 0
          ? fetch(`${baseUrl}/v1/pets`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ name: `load ${client}-${i}`, categoryId: 1 }),
            })
          : fetch(`${baseUrl}/v1/pets?limit=5`, { headers }));
        await response.arrayBuffer();
        if (response.ok) counts.answered++;
        else counts.failed++;
      } catch (error) {
        const code = causeCode(error);
        if (code === 'ECONNREFUSED') {
          counts.refused++;
          if (stopping) return;
        } else {
          counts.dropped++;
          counts.droppedBy.push(`${client % 2 === 0 ? 'POST' : 'GET'} ${code}${stopping ? ', after stopping()' : ''}`);
          if (stopping) return;
        }
      }
    }
  });
  return {
    stopping: () => {
      stopping = true;
    },
    finished: Promise.all(clients).then(() => counts),
  };
}
