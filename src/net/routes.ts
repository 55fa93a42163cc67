// Route tables: `{method, path: '/jobs/:id/events', handler}` compiled once
// into segment lists, and the lookup that tells "no such path" (404) from
// "path exists, wrong method" (405), each with the routes a caller could use.

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

const METHODS: readonly string[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A route as the table declares it; `Handler` is the server's handler type. */
export interface RouteSpec<Handler> {
  readonly method: HttpMethod;
  /** Literal segments and `:name` parameters, e.g. `/jobs/:id`. */
  readonly path: string;
  readonly handler: Handler;
}

export type RouteMatch<Handler> =
  | { kind: 'found'; route: RouteSpec<Handler>; params: Record<string, string> }
  | { kind: 'no-path'; valid: string[] }
  | { kind: 'wrong-method'; allowed: string[]; valid: string[] }
  | { kind: 'bad-encoding'; segment: string };

interface Compiled<Handler> {
  route: RouteSpec<Handler>;
  /** Literal text, or `{ param }` for a `:name` segment. */
  segments: (string | { param: string })[];
}

function splitPath(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.split('/').slice(1);
}

export class RouteTable<Handler> {
  private readonly compiled: Compiled<Handler>[];
  /** "GET /jobs" lines, for 404 and 405 answers. */
  readonly listing: string[];

  constructor(routes: readonly RouteSpec<Handler>[]) {
    const seen = new Set<string>();
    this.compiled = routes.map((route) => {
      if (!METHODS.includes(route.method)) throw new Error(`route ${route.method} ${route.path}: method must be one of ${METHODS.join(', ')}`);
      if (!route.path.startsWith('/')) throw new Error(`route ${route.method} ${route.path}: the path must start with "/"`);
      const segments = splitPath(route.path).map((segment) => {
        if (!segment.startsWith(':')) return segment;
        const param = segment.slice(1);
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(param)) throw new Error(`route ${route.method} ${route.path}: parameter "${segment}" must be ":" and a name`);
        return { param };
      });
      const shape = `${route.method} /${segments.map((s) => (typeof s === 'string' ? s : ':')).join('/')}`;
      if (seen.has(shape)) throw new Error(`route ${route.method} ${route.path} is declared twice (or clashes with another route's parameters)`);
      seen.add(shape);
      return { route, segments };
    });
    this.listing = routes.map((route) => `${route.method} ${route.path}`);
  }

  /** HEAD is served by the GET route (node:http sends its headers, not its body), as HTTP says it must be; not for WebSocket routes (`headAsGet: false`). */
  match(method: string, pathname: string, options: { headAsGet?: boolean } = {}): RouteMatch<Handler> {
    const headAsGet = options.headAsGet ?? true;
    const wanted = method === 'HEAD' && headAsGet ? 'GET' : method;
    const parts = splitPath(pathname);
    const allowed: string[] = [];
    for (const { route, segments } of this.compiled) {
      if (segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let matches = true;
      for (let i = 0; i < segments.length && matches; i++) {
        const segment = segments[i];
        if (typeof segment === 'string') {
          matches = segment === parts[i];
        } else if (parts[i] === '') {
          matches = false;
        } else {
          try {
            params[segment.param] = decodeURIComponent(parts[i]);
          } catch {
            return { kind: 'bad-encoding', segment: parts[i] };
          }
        }
      }
      if (!matches) continue;
      if (route.method === wanted) return { kind: 'found', route, params };
      allowed.push(route.method);
      if (route.method === 'GET' && headAsGet) allowed.push('HEAD');
    }
    return allowed.length > 0 ? { kind: 'wrong-method', allowed, valid: this.listing } : { kind: 'no-path', valid: this.listing };
  }
}
