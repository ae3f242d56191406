import { memo } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';

const components: Components = {
  // Links leave the playground in a new tab and tell the target nothing about it.
  a: ({ node: _node, href, children, ...rest }) => (
    <a {...rest} href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
  // Images from model output are not loaded (the page's policy allows none from elsewhere, and they can track
  // the reader); the link is shown instead.
  img: ({ src, alt }) =>
    typeof src === 'string' && src ? (
      <a href={src} target="_blank" rel="noopener noreferrer">
        {alt ? `Image: ${alt}` : 'Image'}
      </a>
    ) : null,
  table: ({ node: _node, ...rest }) => (
    <div className="markdown__table">
      <table {...rest} />
    </div>
  ),
};

const plugins = [remarkGfm];

/** Model output as Markdown. Raw HTML stays text and unsafe URLs are dropped (react-markdown's defaults). */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={plugins} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
