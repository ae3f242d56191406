/** The service's name and release, as health responses, MCP serverInfo and /api/version report them. */
export const SERVICE_NAME = 'agent-service';
export const SERVICE_VERSION = '2.8.0';

/** API versions this release serves (spec "Versioning"). */
export const API_VERSION = 'v1';
export const SUPPORTED_API_VERSIONS: readonly string[] = ['v1'];
export const DEPRECATED_API_VERSIONS: readonly string[] = [];
export const SUNSET_DATES: Readonly<Record<string, string>> = {};
