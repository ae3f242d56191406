import { useEffect, useId, useRef, useState } from 'react';
import { describeError } from '../../../../shared/api/api-error';
import {
  WorkflowInvalidError,
  type BuilderApi,
  type CodeLanguage,
  type GeneratedCode,
  type WorkflowDefinition,
} from '../../api/builder-api';
import { copyText, downloadText } from '../../ui/download';
import { CopyIcon, DownloadIcon } from '../../ui/icons';
import { Tabs, tabIds } from '../../ui/tabs';
import { semanticKey } from '../editor/editor-state';

const LANGUAGES = [
  { id: 'python', label: 'Python' },
  { id: 'typescript', label: 'TypeScript' },
] as const;

/** How long after the last change the code is generated again while the panel is open. */
const GENERATE_DEBOUNCE_MS = 500;

type Result = { key: string; code: GeneratedCode } | { key: string; invalid: number } | { key: string; error: string };

export interface CodePanelProps {
  api: BuilderApi;
  definition: WorkflowDefinition;
  onShowProblems: () => void;
}

/** The workflow as a LangGraph program in Python or TypeScript, regenerated as the canvas changes. */
export function CodePanel({ api, definition, onShowProblems }: CodePanelProps) {
  const [language, setLanguage] = useState<CodeLanguage>('python');
  const [result, setResult] = useState<Result | null>(null);
  const [copied, setCopied] = useState<'copied' | 'failed' | null>(null);
  const latest = useRef(definition);
  const codeRef = useRef<HTMLElement>(null);
  const idBase = useId();
  const key = `${language}:${semanticKey(definition)}`;

  useEffect(() => {
    latest.current = definition;
  });

  useEffect(() => {
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      api.generate(latest.current, language, controller.signal).then(
        (code) => setResult({ key, code }),
        (failure: unknown) => {
          if (controller.signal.aborted) return;
          if (failure instanceof WorkflowInvalidError) {
            setResult({ key, invalid: failure.report.errors.length });
          } else {
            setResult({ key, error: describeError(failure) });
          }
        },
      );
    }, GENERATE_DEBOUNCE_MS);
    return () => {
      window.clearTimeout(timer);
      controller.abort();
    };
  }, [api, key, language]);

  useEffect(() => {
    if (copied === null) return undefined;
    const timer = window.setTimeout(() => setCopied(null), 2000);
    return () => window.clearTimeout(timer);
  }, [copied]);

  const fresh = result?.key === key;
  const shown = result && 'code' in result && result.code.language === language ? result.code : null;

  async function copy() {
    if (!shown) return;
    if (await copyText(shown.code)) {
      setCopied('copied');
      return;
    }
    // No clipboard access: select the code so Ctrl+C copies it.
    const element = codeRef.current;
    const selection = window.getSelection();
    if (element && selection) {
      selection.selectAllChildren(element);
      setCopied('failed');
    }
  }

  const ids = tabIds(idBase, language);
  return (
    <div className="code-panel">
      <Tabs items={LANGUAGES} value={language} onChange={setLanguage} label="Language" idBase={idBase} />
      <div className="code-panel__body" role="tabpanel" id={ids.panel} aria-labelledby={ids.tab}>
        <div className="code-panel__bar">
          <span className="code-panel__file">
            {shown ? <code>{shown.filename}</code> : null}
            {!fresh ? <span className="spinner spinner--tiny" aria-label="Generating" role="img" /> : null}
          </span>
          <button type="button" className="button button--small" disabled={!shown} onClick={() => void copy()}>
            <CopyIcon />
            Copy
          </button>
          <button
            type="button"
            className="button button--small"
            disabled={!shown}
            onClick={() => shown && downloadText(shown.filename, shown.code)}
          >
            <DownloadIcon />
            Download
          </button>
        </div>
        <p className="visually-hidden" role="status">
          {copied === 'copied'
            ? 'Copied to the clipboard.'
            : copied === 'failed'
              ? 'Selected; press Ctrl+C to copy.'
              : ''}
        </p>
        {result && 'invalid' in result ? (
          <div className="panel-note" role="alert">
            <p>
              Code is generated from a valid workflow. Fix {result.invalid}{' '}
              {result.invalid === 1 ? 'problem' : 'problems'} first.
            </p>
            <button type="button" className="button button--small" onClick={onShowProblems}>
              Show problems
            </button>
          </div>
        ) : result && 'error' in result ? (
          <p className="form-error" role="alert">
            {result.error}
          </p>
        ) : null}
        {shown ? (
          <pre
            className="code-view"
            role="region"
            tabIndex={0}
            aria-label={`Generated ${language === 'python' ? 'Python' : 'TypeScript'} code`}
            data-stale={!fresh || undefined}
          >
            <code ref={codeRef} className={`language-${shown.language}`}>
              {shown.code}
            </code>
          </pre>
        ) : result === null ? (
          <p className="panel-note">
            <span className="spinner" aria-hidden="true" /> Generating…
          </p>
        ) : null}
      </div>
    </div>
  );
}
