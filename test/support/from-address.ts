import { request } from 'node:http';

/**
 * A GET sent from a chosen loopback source address (127.0.0.2, 127.0.0.3, ...): on Linux every
 * 127/8 address is the machine's own, so one test can be several clients. fetch cannot bind its
 * source address; node:http can.
 */
export function getFrom(
  localAddress: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { localAddress, headers, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    sent.on('error', reject);
    sent.end();
  });
}
