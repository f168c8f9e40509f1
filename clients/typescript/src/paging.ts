/**
 * Walks hookd's paged List calls (`pageToken` / `nextPageToken`) to the end.
 * @module
 */

/** One page: its items and the token of the next page, empty after the last. */
export interface Page<T> {
  items: readonly T[];
  nextPageToken: string;
}

/**
 * Yields every item of every page; `fetch(pageToken)` reads one page. Pages
 * are read as the caller iterates, so breaking out early reads no more.
 */
export async function* everyPage<T>(fetch: (pageToken: string) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let token = "";
  do {
    const page = await fetch(token);
    yield* page.items;
    token = page.nextPageToken;
  } while (token !== "");
}
