import client from 'prom-client';

/** The spec's MCP metrics, on the app's registry. */
export interface McpMetrics {
  messages: client.Counter<'method' | 'status'>;
  toolCalls: client.Counter<'tool' | 'status'>;
  connections: client.Gauge<'server'>;
}

export function createMcpMetrics(registry: client.Registry): McpMetrics {
  return {
    messages: new client.Counter({
      name: 'mcp_messages_total',
      help: 'MCP requests handled, by method and outcome (success, error, rate_limited)',
      labelNames: ['method', 'status'] as const,
      registers: [registry],
    }),
    toolCalls: new client.Counter({
      name: 'mcp_tool_calls_total',
      help: 'MCP tool calls, by tool and outcome (success, error, denied, rate_limited)',
      labelNames: ['tool', 'status'] as const,
      registers: [registry],
    }),
    connections: new client.Gauge({
      name: 'mcp_sse_connections_active',
      help: 'Open MCP streams and connections, by server (streamable_http, sse, websocket, stdio)',
      labelNames: ['server'] as const,
      registers: [registry],
    }),
  };
}
