/** Where scripts/build.ts records what it built from (relative to the repository). */
export declare const STAMP: string;
/** A hash of the build's inputs under `root` (names and contents, in a fixed order). */
export declare function buildInputsHash(root: string): string;
