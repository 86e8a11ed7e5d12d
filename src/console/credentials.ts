/**
 * The API key or bearer token, when the server asks for one (HTTP 401). Kept in sessionStorage:
 * it lives as long as the tab and is never written to disk or sent anywhere but this origin.
 */
const KEY = 'devtool-a2a.credential';

export function savedCredential(): string | undefined {
  try {
    return sessionStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined; // storage disabled: ask again on every load
  }
}

export function saveCredential(value: string | undefined): void {
  try {
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  } catch {
    /* storage disabled: the credential lives in memory only */
  }
}
