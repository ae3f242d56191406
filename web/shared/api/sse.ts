/**
 * The event-stream reader the service reads its model's answers with (the HTML standard's parser: lines end in
 * CRLF, LF or CR, `data:` lines joined with newlines, a blank line dispatches, comments and unknown fields
 * skipped): one parser for the server and the pages, bundled from the server's source.
 */
export { type ServerSentEvent, serverSentEvents as readServerSentEvents } from '../../../src/adapters/llm/server-sent';
