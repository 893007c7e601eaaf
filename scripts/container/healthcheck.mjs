// The image's HEALTHCHECK: exit 0 when GET /healthz on this container's own service answers 2xx
// within 2 s, else 1. Node's fetch, since the image has no curl or wget. HOST and PORT are the
// service's own; a wildcard HOST (0.0.0.0, ::) is reached on loopback.
const host = (process.env.HOST ?? '').trim();
const port = (process.env.PORT ?? '').trim() || '3000';
const target =
  host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
try {
  const response = await fetch(`http://${target}:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
  process.exit(response.ok ? 0 : 1);
} catch (error) {
  console.error(`healthcheck: ${error?.cause?.code ?? error?.name ?? error}`);
  process.exit(1);
}
