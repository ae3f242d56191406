import type { Config } from '../config.js';
import { createAuthenticate, type CallerResolver } from '../http/authenticate.js';
import { docsRoutes } from '../http/docs.js';
import { type HostPolicy, hostValidation } from '../http/host-validation.js';
import { HttpListener, type ListenerName, createListenerApp } from '../http/listener.js';
import { metricsRoutes } from '../http/metrics.routes.js';
import { buildOpenApiDocument } from '../http/openapi.js';
import type { RouteGroup } from '../http/route.js';
import type { Module } from '../ports/module.js';
import type { Base } from './modules.js';

export const LISTENERS = ['main', 'playground', 'builder'] as const satisfies readonly ListenerName[];

export interface ListenerDeps {
  config: Config;
  base: Base;
  resolveCaller: CallerResolver;
  hosts: HostPolicy | undefined;
  wwwAuthenticate: string;
  /** Every module whose routes the listeners serve (health's open routes included). */
  modules: Module<unknown>[];
  /** Route groups that are not a module's: the wires, by listener. */
  wires: Partial<Record<ListenerName, RouteGroup[]>>;
}

/**
 * The three HTTP listeners. Each serves, on the common plumbing, the routes every module contributes to it: open
 * routes from the first moment, the others once start-up has finished. The main listener adds the MCP wires, the
 * metrics and the API documentation.
 */
export function buildListeners(deps: ListenerDeps) {
  const { config, base, modules } = deps;
  const routes = (listener: ListenerName, kind: 'routes' | 'openRoutes') =>
    modules.flatMap((module) => module[kind]?.[listener] ?? []);
  const groups: Record<ListenerName, { alwaysOn: RouteGroup[]; gated: RouteGroup[] }> = {
    main: {
      alwaysOn: [...routes('main', 'openRoutes'), metricsRoutes(base.metrics)],
      gated: [...routes('main', 'routes'), ...(deps.wires.main ?? [])],
    },
    playground: {
      alwaysOn: routes('playground', 'openRoutes'),
      gated: [...routes('playground', 'routes'), ...(deps.wires.playground ?? [])],
    },
    builder: {
      alwaysOn: routes('builder', 'openRoutes'),
      gated: [...routes('builder', 'routes'), ...(deps.wires.builder ?? [])],
    },
  };

  const listeners = new Map<ListenerName, HttpListener>();
  let openApi: unknown;
  const openApiDocument = () =>
    (openApi ??= buildOpenApiDocument(
      LISTENERS.map((name) => ({
        ...(name !== 'main' && listeners.get(name)?.listening && { serverUrl: listeners.get(name)!.url }),
        alwaysOn: groups[name].alwaysOn,
        groups: groups[name].gated,
      })),
    ));
  const authenticate = createAuthenticate(deps.resolveCaller);
  for (const name of LISTENERS) {
    const app = createListenerApp({
      name,
      logger: base.logger,
      metrics: base.metrics,
      lifecycle: base.lifecycle,
      bodyLimitBytes: config.bodyLimitBytes,
      trustProxy: config.trustProxy,
      authenticate,
      ...(deps.hosts && { guard: hostValidation(deps.hosts) }),
      wwwAuthenticate: deps.wwwAuthenticate,
      alwaysOn: groups[name].alwaysOn,
      groups: groups[name].gated,
      extra: [
        ...(name === 'main' ? [docsRoutes(openApiDocument)] : []),
        ...modules.flatMap((module) => module.pages?.[name] ?? []),
      ],
    });
    listeners.set(name, new HttpListener(name, app));
  }

  return {
    listeners,
    /** Every route a listener serves through the registry (the OpenAPI document is built from these). */
    routeGroups: (name: ListenerName) => [...groups[name].alwaysOn, ...groups[name].gated],
    /** Forgets the built OpenAPI document: it names the listener URLs, known once they are bound. */
    refreshDocument: () => {
      openApi = undefined;
    },
  };
}
