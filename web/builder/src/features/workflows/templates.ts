import type { WorkflowDefinition } from '../../api/builder-api';

/** A workflow to start from: saved as it is through the create endpoint, then opened to adapt. */
export interface StarterTemplate {
  id: string;
  /** What the list offers it as. */
  title: string;
  /** One sentence on what it shows. */
  summary: string;
  definition: WorkflowDefinition;
}

// Nodes are 200 wide and about 80 high. Plain steps follow each other 250 apart; a router's branches fan out
// with room around them, so that each branch's label sits between the nodes rather than over them.
const at = (x: number, y: number) => ({ x, y });

const TAGS = ['starter'];

/**
 * What a person with no workflows yet may start from: each a complete, valid workflow (the browser tests save
 * every one through the service and check its validation report) that shows one way of joining the nodes.
 */
export const STARTER_TEMPLATES: readonly StarterTemplate[] = [
  {
    id: 'agent-with-search',
    title: 'Agent with search',
    summary: 'An agent that looks things up with the search_web tool before it answers.',
    definition: {
      name: 'Agent with search',
      description: 'Answers a question with facts it searched for first.',
      tags: TAGS,
      schema_version: 1,
      nodes: [
        { id: 'start', type: 'start', position: at(0, 0), data: { label: 'Start' } },
        {
          id: 'researcher',
          type: 'agent',
          position: at(250, 0),
          data: {
            label: 'Researcher',
            system_prompt:
              'Answer the question with current facts. Search with search_web first, then answer in a few ' +
              'sentences and name your sources.',
            tools: ['search_web'],
          },
        },
        { id: 'end', type: 'end', position: at(500, 0), data: { label: 'End' } },
      ],
      edges: [
        { id: 'e1', source: 'start', target: 'researcher' },
        { id: 'e2', source: 'researcher', target: 'end' },
      ],
    },
  },
  {
    id: 'human-approval',
    title: 'Human approval step',
    summary: 'An agent drafts, a person approves; a router sends the draft on, or back for changes.',
    definition: {
      name: 'Human approval step',
      description: 'Drafts a reply, asks a person to approve it, and revises it if they ask for changes.',
      tags: TAGS,
      schema_version: 1,
      nodes: [
        { id: 'start', type: 'start', position: at(0, 160), data: { label: 'Start' } },
        {
          id: 'draft',
          type: 'agent',
          position: at(250, 160),
          data: { label: 'Draft', system_prompt: 'Write a short, friendly draft reply to the request.', tools: [] },
        },
        {
          id: 'approval',
          type: 'human',
          position: at(500, 160),
          data: { label: 'Approval', question: 'Approve this draft? Answer yes to send it, or say what to change.' },
        },
        { id: 'approved', type: 'router', position: at(750, 160), data: { label: 'Approved?' } },
        {
          id: 'revise',
          type: 'agent',
          position: at(1070, 370),
          data: {
            label: 'Revise',
            system_prompt: 'Rewrite the draft with the changes the reviewer asked for. Keep it short.',
            tools: [],
          },
        },
        { id: 'end', type: 'end', position: at(1350, 160), data: { label: 'End' } },
      ],
      edges: [
        { id: 'e1', source: 'start', target: 'draft' },
        { id: 'e2', source: 'draft', target: 'approval' },
        { id: 'e3', source: 'approval', target: 'approved' },
        {
          id: 'e4',
          source: 'approved',
          target: 'end',
          label: 'approved',
          data: { condition: 'approval == "yes" or approval == "Yes"' },
        },
        { id: 'e5', source: 'approved', target: 'revise', label: 'changes asked' },
        { id: 'e6', source: 'revise', target: 'end' },
      ],
    },
  },
  {
    id: 'router',
    title: 'Router',
    summary: 'A router sends each request down one branch: a search, a billing agent, or a support agent.',
    definition: {
      name: 'Router',
      description: 'Sends each request to the step that fits it, by what the request says.',
      tags: TAGS,
      schema_version: 1,
      nodes: [
        { id: 'start', type: 'start', position: at(0, 200), data: { label: 'Start' } },
        { id: 'triage', type: 'router', position: at(250, 200), data: { label: 'What is it about?' } },
        {
          id: 'search',
          type: 'tool',
          position: at(760, 0),
          data: { label: 'Search', tool: 'search_web', args: { query: '{{ input }}', max_results: 3 } },
        },
        {
          id: 'billing',
          type: 'agent',
          position: at(760, 200),
          data: {
            label: 'Billing',
            system_prompt: 'You answer questions about invoices and refunds. Be precise and brief.',
            tools: [],
          },
        },
        {
          id: 'support',
          type: 'agent',
          position: at(760, 400),
          data: { label: 'Support', system_prompt: 'You help with everything else. Be kind and brief.', tools: [] },
        },
        { id: 'end', type: 'end', position: at(1010, 200), data: { label: 'End' } },
      ],
      edges: [
        { id: 'e1', source: 'start', target: 'triage' },
        {
          id: 'e2',
          source: 'triage',
          target: 'search',
          label: 'a search',
          data: { condition: 'input contains "search"' },
        },
        {
          id: 'e3',
          source: 'triage',
          target: 'billing',
          label: 'billing',
          data: { condition: 'input contains "invoice" or input contains "refund"' },
        },
        { id: 'e4', source: 'triage', target: 'support', label: 'anything else' },
        { id: 'e5', source: 'search', target: 'end' },
        { id: 'e6', source: 'billing', target: 'end' },
        { id: 'e7', source: 'support', target: 'end' },
      ],
    },
  },
];
