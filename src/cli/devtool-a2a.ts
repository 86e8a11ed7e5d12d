#!/usr/bin/env node
/**
 * The terminal client's process entry (package.json `bin`): reads its environment and
 * streams, runs the chat, exits with its code.
 */
import { main } from './chat.js';
import type { ChatIo } from './chat.js';

/** The chat's view of this process. */
export function processIo(): ChatIo {
  const editor = process.env.VISUAL ?? process.env.EDITOR;
  return {
    input: process.stdin,
    write: (s) => process.stdout.write(s),
    error: (s) => process.stderr.write(s),
    color: process.stdout.isTTY && (process.env.NO_COLOR ?? '') === '',
    terminal: process.stdin.isTTY === true,
    ...(editor !== undefined ? { editor } : {}),
    onInterrupt: (handler) => {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
  };
}

// Open keep-alive sockets would hold the process for seconds after the chat ends.
process.exit(await main(process.argv.slice(2), processIo()));
