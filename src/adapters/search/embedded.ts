import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ConversationSearcher, SearchResult, WebSearch } from './port.js';

interface Section {
  title: string;
  anchor: string;
  text: string;
}

function readme(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return '';
    dir = parent;
  }
  const file = join(dir, 'README.md');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/** The documentation split at its headings, each section searchable on its own. */
export function sectionsOf(markdown: string): Section[] {
  const sections: Section[] = [];
  let current: Section | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^#{1,4}\s+(.*)$/.exec(line);
    if (heading) {
      if (current) sections.push(current);
      const title = heading[1]!.trim();
      current = {
        title,
        anchor: title
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, ''),
        text: '',
      };
    } else if (current) {
      current.text += `${line}\n`;
    }
  }
  if (current) sections.push(current);
  return sections.filter((s) => s.text.trim());
}

function excerpt(text: string, term: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const at = Math.max(0, flat.toLowerCase().indexOf(term));
  const start = Math.max(0, at - 80);
  return `${start > 0 ? '…' : ''}${flat.slice(start, start + 240)}${start + 240 < flat.length ? '…' : ''}`;
}

/**
 * Search with no network: the service's own documentation (README sections, ranked by how often the query's
 * words occur) and the caller's own conversations. The documentation (about half a megabyte once split) is read on
 * the first search, not by every instance at start-up.
 */
export function createEmbeddedSearch(conversations: ConversationSearcher, markdown?: string): WebSearch {
  let split: Section[] | undefined;
  return {
    provider: 'embedded',
    async search(query, { limit, subject }) {
      const terms = [
        ...new Set(
          query
            .toLowerCase()
            // Letters of any script: \W would cut "café" to "caf", which also matches "cafeteria".
            .split(/[^\p{L}\p{N}]+/u)
            .filter((t) => t.length > 1),
        ),
      ];
      if (terms.length === 0) return [];
      const docs: (SearchResult & { score: number })[] = [];
      split ??= sectionsOf(markdown ?? readme());
      for (const section of split) {
        const haystack = `${section.title}\n${section.text}`.toLowerCase();
        const counts = terms.map((t) => haystack.split(t).length - 1);
        if (counts.some((c) => c === 0)) continue;
        const score =
          counts.reduce((a, b) => a + b, 0) + (terms.some((t) => section.title.toLowerCase().includes(t)) ? 5 : 0);
        docs.push({
          title: `Agent Service documentation: ${section.title}`,
          url: `agent-service://docs/readme#${section.anchor}`,
          snippet: excerpt(section.text, terms[0]!),
          source: 'documentation',
          score,
        });
      }
      docs.sort((a, b) => b.score - a.score);
      const hits = await conversations.search(subject, terms.join(' '), limit);
      const fromConversations: SearchResult[] = hits.map((hit) => ({
        title: `Conversation: ${hit.title}`,
        url: `conversation://${hit.conversationId}`,
        snippet: hit.snippet,
        source: 'conversation',
      }));
      return [...docs.map(({ score: _, ...result }) => result), ...fromConversations].slice(0, limit);
    },
  };
}
