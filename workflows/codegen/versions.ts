/**
 * The LangGraph releases the generated code is written for, as each generated file's header names them: the
 * interrupt and resume API of LangGraph 1.x. The TypeScript range starts at the release the tests run the generated
 * module with (this repository's `@langchain/langgraph`); the Python one is the same major release of LangGraph for
 * Python, whose API the generated module uses.
 */
export const LANGGRAPH_PYTHON_REQUIREMENT = 'langgraph>=1.0,<2';
export const LANGGRAPH_JS_RANGE = '>=1.4.18 <2';
