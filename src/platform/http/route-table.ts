import type { Method, RouteSpec } from './route';

interface Compiled {
  spec: RouteSpec;
  method: string;
  pattern: RegExp;
  names: string[];
}

export interface Match {
  spec: RouteSpec;
  /** Path parameters, percent-decoded (a URIError for a bad encoding: 400). */
  params: Record<string, string>;
}

/**
 * The route table as the router: a request's method and path find their route as express's router
 * would (case-insensitive, one trailing slash allowed, each parameter one non-empty segment, HEAD
 * served by GET, the first route in table order wins), a path without parameters by one lookup.
 */
export class RouteTable {
  private readonly ordered: Compiled[];
  private readonly exact = new Map<string, RouteSpec>();

  constructor(routes: RouteSpec[]) {
    this.ordered = routes.map((spec) => compile(spec));
    for (const [index, route] of this.ordered.entries()) {
      if (route.names.length > 0) continue;
      const key = `${route.method} ${route.spec.path.toLowerCase()}`;
      // Only where no earlier route (one with parameters) would take the same path first.
      const shadowed = this.ordered.slice(0, index).some((earlier) => earlier.method === route.method && earlier.pattern.test(route.spec.path));
      if (!shadowed && !this.exact.has(key)) this.exact.set(key, route.spec);
    }
  }

  match(method: string, url: string): Match | undefined {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    return this.find(method, path) ?? (method === 'HEAD' ? this.find('GET', path) : undefined);
  }

  /** The methods some route serves the path under (HEAD with GET, OPTIONS never), in a fixed order. */
  methodsOf(url: string): string[] {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const methods = new Set<string>();
    for (const route of this.ordered) if (route.pattern.test(path)) methods.add(route.method);
    if (methods.has('GET')) methods.add('HEAD');
    return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => methods.has(m));
  }

  private find(method: string, path: string): Match | undefined {
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const spec = this.exact.get(`${method} ${trimmed.toLowerCase()}`);
    if (spec) return { spec, params: {} };
    for (const route of this.ordered) {
      if (route.method !== method) continue;
      const found = route.pattern.exec(path);
      if (!found) continue;
      const params: Record<string, string> = {};
      route.names.forEach((name, i) => {
        params[name] = decodeURIComponent(found[i + 1] as string);
      });
      return { spec: route.spec, params };
    }
    return undefined;
  }
}

function compile(spec: RouteSpec): Compiled {
  const names: string[] = [];
  const source = spec.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_match, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { spec, method: (spec.method as Method).toUpperCase(), pattern: new RegExp(`^${source}/?$`, 'i'), names };
}
