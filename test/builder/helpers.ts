import type { App } from '../../src/app.js';
import { parseEvents } from '../helpers/sse.js';
import type { SignedIn } from '../helpers/client.js';

export type Json = Record<string, unknown>;

/** POSTs to the builder listener asking for server-sent events, and reads the whole stream. */
export async function streamFrom(app: App, user: SignedIn, path: string, body: unknown) {
  const res = await fetch(`${app.url('builder')}${path}`, {
    method: 'POST',
    headers: { ...user.credentials, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    events: res.headers.get('content-type')?.startsWith('text/event-stream') ? parseEvents(text) : [],
    text,
  };
}

const at = (x: number, y = 0) => ({ x, y });

/**
 * A workflow with every kind of node: the agent answers, a router sends questions that ask for a search through a
 * tool node, a human reviews, and a second router loops back to the agent when the answer is "again".
 */
export function reviewedResearch(name = 'Reviewed research') {
  return {
    name,
    description: 'Research, then ask a person',
    tags: ['research', 'review'],
    nodes: [
      { id: 'start', type: 'start', position: at(0), data: { label: 'Start' } },
      {
        id: 'research',
        type: 'agent',
        position: at(200),
        data: { label: 'Research', system_prompt: 'Answer briefly.', tools: ['search_web'] },
      },
      { id: 'needs_search', type: 'router', position: at(400), data: { label: 'Needs a search?' } },
      {
        id: 'lookup',
        type: 'tool',
        position: at(600, -100),
        data: { label: 'Look up', tool: 'conversation_search', args: { query: '{{ input }}', limit: 3 } },
      },
      { id: 'review', type: 'human', position: at(800), data: { label: 'Review', question: 'Is this good?' } },
      { id: 'decide', type: 'router', position: at(1000), data: { label: 'Again?' } },
      { id: 'end', type: 'end', position: at(1200), data: { label: 'End' } },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'research' },
      { id: 'e2', source: 'research', target: 'needs_search' },
      {
        id: 'e3',
        source: 'needs_search',
        target: 'lookup',
        label: 'search',
        data: { condition: 'input contains "search"' },
      },
      { id: 'e4', source: 'needs_search', target: 'review', label: 'no search' },
      { id: 'e5', source: 'lookup', target: 'review' },
      { id: 'e6', source: 'review', target: 'decide' },
      { id: 'e7', source: 'decide', target: 'research', label: 'again', data: { condition: 'review == "again"' } },
      { id: 'e8', source: 'decide', target: 'end', label: 'done' },
    ],
  };
}

/** The smallest valid workflow: start → agent → end. */
export function linear(name = 'Linear') {
  return {
    name,
    nodes: [
      { id: 'start', type: 'start', position: at(0), data: {} },
      { id: 'answer', type: 'agent', position: at(200), data: { system_prompt: 'Be brief.' } },
      { id: 'end', type: 'end', position: at(400), data: {} },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'answer' },
      { id: 'e2', source: 'answer', target: 'end' },
    ],
  };
}

/** Asks a person first, then lets the model answer what they said: the answer shows in the run's output. */
export function askThenAnswer(name = 'Ask, then answer') {
  return {
    name,
    nodes: [
      { id: 'start', type: 'start', position: at(0), data: {} },
      { id: 'ask', type: 'human', position: at(200), data: { question: 'What should I say?' } },
      { id: 'reply', type: 'agent', position: at(400), data: { system_prompt: 'Repeat it.' } },
      { id: 'end', type: 'end', position: at(600), data: {} },
    ],
    edges: [
      { id: 'e1', source: 'start', target: 'ask' },
      { id: 'e2', source: 'ask', target: 'reply' },
      { id: 'e3', source: 'reply', target: 'end' },
    ],
  };
}
