/** Where scripts/build.ts records what it built from (relative to the repository). */
export declare const STAMP: string;
/** A hash of the build's inputs under `root` (names and contents, in a fixed order). */
export declare function buildInputsHash(root: string): string;
/** Whether dist/ under `root` is what the build would make now (main.js, the stamp's hash, its PGlite template). */
export declare function stampIsFresh(root: string): boolean;
