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
  const loaded = async (ctx: ContextState) => {
    const text = await readMemory(ctx.workspace, protectedPaths);
    return text === undefined || text.trim() === '' ? undefined : text;
  };
  return [
    {
      name: 'refresh',
      description: `Reload ${MEMORY_FILE} (it is read afresh before every model step)`,
      run: async (r) => {
        const text = await loaded(r.context);
        return {
          kind: 'text',
          text:
            text === undefined
              ? `Memory refreshed: there is no ${MEMORY_FILE} in ${r.context.workspace}.`
              : `Memory refreshed: ${text.length} characters from 1 file (${MEMORY_FILE}), read afresh before every model step.`,
        };
      },
    },
    {
      name: 'list',
      description: `List the context files in use (${MEMORY_FILE})`,
      run: async (r) => {
        const text = await loaded(r.context);
        return {
          kind: 'text',
          text:
            text === undefined
              ? `No ${MEMORY_FILE} file is in use.`
              : `There is 1 ${MEMORY_FILE} file in use:\n${path.join(r.context.workspace, MEMORY_FILE)}`,
        };
      },
    },
  ];
}
