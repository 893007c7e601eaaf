/**
 * The route pattern that answered (`/v1/pets/:petId`), never the raw path with its ids and query;
 * `unmatched` for paths no route of ours matched (Nest's catch-all included), so values stay few.
 */
export function routeOf(request: object): string {
  const route: unknown = Reflect.get(request, 'route');
  const baseUrl: unknown = Reflect.get(request, 'baseUrl');
  const path = typeof route === 'object' && route !== null && 'path' in route ? route.path : null;
  return typeof path === 'string' && !path.includes('*')
    ? `${typeof baseUrl === 'string' ? baseUrl : ''}${path}`
    : 'unmatched';
}
