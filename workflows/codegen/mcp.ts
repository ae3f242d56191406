import type { Workflow } from '../schema.js';

/**
 * The connected MCP servers a workflow's generated code calls: which of its tools come from a server the service
 * is connected to (named `<slug>__<tool>`), and how the code reaches each server. The code carries a server's URL as
 * known when it was generated (a URL is not a secret) and the names of the environment variables that override it
 * and hold its credential; it never carries a credential, and the service never hands one to the generator.
 */

/** A tool as the generator is told of it (the builder's tool listing): the server it comes from, if connected. */
export interface CodegenTool {
  name: string;
  server?: { slug: string; name: string; transport: string; url: string | null } | undefined;
  /** A connected tool's own name on its server, when `name` holds it shortened or made safe. */
  upstreamName?: string | undefined;
}

export type McpTransportKind = 'streamable_http' | 'sse' | 'stdio';

export interface McpServerPlan {
  /** The prefix of its tools' names (`files` in `files__read_file`). */
  slug: string;
  name: string;
  transport: McpTransportKind;
  /** Where it was served, without anything that could carry a secret (user info, query, fragment); null over stdio. */
  url: string | null;
  /** Whether parts of the known URL were left out, so that the URL variable must give it whole. */
  urlTrimmed: boolean;
  urlEnv: string;
  /** The variable whose value, when set, goes as `Authorization: Bearer <value>`. */
  tokenEnv: string;
  /** Over stdio: the variable holding the command that starts the server (the operator's to configure). */
  commandEnv: string;
  /** The workflow's tools of this server in order of first use: their names here, and on the server. */
  tools: { name: string; upstream: string }[];
}

const TRANSPORTS: readonly string[] = ['streamable_http', 'sse', 'stdio'] satisfies McpTransportKind[];

/** Tool names of connected servers hold this between the server's slug and the upstream tool's name. */
const SEPARATOR = '__';

/**
 * The servers of the connected tools the workflow names (in tool nodes and agent nodes), sorted by slug. A tool is
 * connected when `tools` says it comes from a server; any other (the service's own, or one the generator was not
 * told about) stays the runtime's to call.
 */
export function planMcpServers(workflow: Workflow, tools: readonly CodegenTool[] = []): McpServerPlan[] {
  const known = new Map<string, CodegenTool & { server: NonNullable<CodegenTool['server']> }>();
  for (const tool of tools)
    if (tool.server && !known.has(tool.name)) known.set(tool.name, { ...tool, server: tool.server });

  const used = workflow.nodes.flatMap((n) => {
    if (n.type === 'tool') return n.data.tool === undefined ? [] : [n.data.tool];
    if (n.type === 'agent') return n.data.tools ?? [];
    return [];
  });
  const servers = new Map<string, McpServerPlan>();
  for (const name of used) {
    const tool = known.get(name);
    const server = tool?.server;
    if (!server || !TRANSPORTS.includes(server.transport) || !name.startsWith(server.slug + SEPARATOR)) continue;
    let plan = servers.get(server.slug);
    if (!plan) {
      const transport = server.transport as McpTransportKind;
      const { url, trimmed } = transport === 'stdio' ? { url: null, trimmed: false } : publicUrl(server.url);
      plan = {
        slug: server.slug,
        name: server.name,
        transport,
        url,
        urlTrimmed: trimmed,
        urlEnv: '',
        tokenEnv: '',
        commandEnv: '',
        tools: [],
      };
      servers.set(server.slug, plan);
    }
    const upstream = tool.upstreamName ?? name.slice(server.slug.length + SEPARATOR.length);
    if (!plan.tools.some((t) => t.name === name)) plan.tools.push({ name, upstream });
  }

  const sorted = [...servers.values()].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  const prefixes = new Set<string>();
  for (const plan of sorted) {
    const name = plan.slug
      .toUpperCase()
      .replace(/[^A-Z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '');
    const wanted = `MCP_SERVER_${name || 'X'}`;
    let prefix = wanted;
    for (let n = 2; prefixes.has(prefix); n++) prefix = `${wanted}_${n}`;
    prefixes.add(prefix);
    plan.urlEnv = `${prefix}_URL`;
    plan.tokenEnv = `${prefix}_TOKEN`;
    plan.commandEnv = `${prefix}_COMMAND`;
  }
  return sorted;
}

/**
 * A server's URL as generated code may carry it: http(s) only, without user info (which the service refuses
 * anyway), query or fragment, where a key could hide. `trimmed` says something was left out.
 */
function publicUrl(url: string | null): { url: string | null; trimmed: boolean } {
  if (url === null) return { url: null, trimmed: false };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url: null, trimmed: true };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { url: null, trimmed: true };
  const trimmed = Boolean(parsed.username || parsed.password || parsed.search || parsed.hash);
  parsed.username = '';
  parsed.password = '';
  parsed.search = '';
  parsed.hash = '';
  return { url: parsed.href, trimmed };
}

/** How a transport is named in comments. */
function transportTitle(transport: McpTransportKind): string {
  return { streamable_http: 'streamable HTTP', sse: 'HTTP+SSE', stdio: 'stdio' }[transport];
}

/** One server in a sentence, for a generated file's header: its transport, and the variables that reach it. */
export function serverSummary(server: McpServerPlan): string {
  const what = `${server.slug} ("${server.name.replace(/[\s\u0085]+/g, ' ').trim()}", ${transportTitle(server.transport)})`;
  if (server.transport === 'stdio') {
    return `${what}: ${server.commandEnv}, the command that starts it, which the operator configures.`;
  }
  const trimmed = server.urlTrimmed ? ', its query or user info left out: give the whole URL' : '';
  const url = server.url ? `${server.urlEnv} (default ${server.url}${trimmed})` : `${server.urlEnv} (required)`;
  return `${what}: ${url}; ${server.tokenEnv}, a bearer token, when it needs one.`;
}
