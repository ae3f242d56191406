/**
 * The LangGraph releases the generated code is written for, as each generated file's header names them: the
 * interrupt and resume API of LangGraph 1.x. The TypeScript range starts at the release the tests run the generated
 * module with (this repository's `@langchain/langgraph`); the Python one is the same major release of LangGraph for
 * Python, whose API the generated module uses.
 */
export const LANGGRAPH_PYTHON_REQUIREMENT = 'langgraph>=1.0,<2';
export const LANGGRAPH_JS_RANGE = '>=1.4.18 <2';

/**
 * The MCP clients the generated code calls connected tools with, when a workflow uses any. The TypeScript range starts
 * at the release the tests run the generated module with (this repository's `@modelcontextprotocol/sdk`, the newest
 * 1.x on npm when chosen): its `Client` with `StreamableHTTPClientTransport`, `SSEClientTransport` and
 * `StdioClientTransport`.
 *
 * The Python requirement could not be checked against PyPI from here; it is the 1.x line of the `mcp` package, whose
 * `mcp.client.streamable_http.streamablehttp_client(url, headers=…)` (since 1.8), `mcp.client.sse.sse_client`,
 * `mcp.client.stdio.stdio_client` and `ClientSession` the module uses. `mcp` 2.x is excluded on purpose: it dropped
 * `streamablehttp_client` (its `streamable_http_client` takes a configured HTTP client instead of headers).
 */
export const MCP_SDK_JS_RANGE = '>=1.32.2 <2';
export const MCP_PYTHON_REQUIREMENT = 'mcp>=1.9,<2';
