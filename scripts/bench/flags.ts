/** The command-line flags of the `npm run bench:*` scripts: `--name value`. */

/** The word after `--name` on the command line, or undefined when the flag is not given. */
export function flagValue(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** `--name n` as a number, or `fallback` when the flag is not given. */
export function numberFlag(name: string, fallback: number): number {
  return process.argv.includes(`--${name}`) ? Number(flagValue(name)) : fallback;
}
