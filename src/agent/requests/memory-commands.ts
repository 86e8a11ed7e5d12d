/**
 * `memory refresh` and `memory list`, as gemini-cli names them. This server reads the workspace's
 * context file afresh before every model step, so a refresh reloads nothing: it reports what the
 * next step will read. `list` names the context files in use (the workspace's GEMINI.md, when it
 * is there).
 */
import path from 'node:path';
import type { ProtectedPaths } from '../../tools/index.js';
import type { ContextState } from '../runtime/live-task.js';
import { MEMORY_FILE, readMemory } from '../runtime/memory.js';

interface Spec {
  name: string;
  description: string;
  run: (r: { context: ContextState }) => Promise<{ kind: 'text'; text: string }>;
}

export function memorySubcommands(protectedPaths: ProtectedPaths): Spec[] {
  /** A subcommand that answers with text about the workspace's context file (undefined: none, or empty). */
  const about = (name: string, description: string, answer: (text: string | undefined, workspace: string) => string): Spec => ({
    name,
    description,
    run: async ({ context }) => {
      const text = await readMemory(context.workspace, protectedPaths);
      return { kind: 'text', text: answer(text === undefined || text.trim() === '' ? undefined : text, context.workspace) };
    },
  });
  return [
    about('refresh', `Reload ${MEMORY_FILE} (it is read afresh before every model step)`, (text, workspace) =>
      text === undefined
        ? `Memory refreshed: there is no ${MEMORY_FILE} in ${workspace}.`
        : `Memory refreshed: ${text.length} characters from 1 file (${MEMORY_FILE}), read afresh before every model step.`,
    ),
    about('list', `List the context files in use (${MEMORY_FILE})`, (text, workspace) =>
      text === undefined
        ? `No ${MEMORY_FILE} file is in use.`
        : `There is 1 ${MEMORY_FILE} file in use:\n${path.join(workspace, MEMORY_FILE)}`,
    ),
  ];
}
