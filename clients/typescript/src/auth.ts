/**
 * Bearer authentication: an interceptor adds hookd's token to every call.
 * @module
 */
import type { Interceptor } from "@connectrpc/connect";

/** Sends `authorization: Bearer <token>` with every request and stream. */
export function bearer(token: string): Interceptor {
  if (token === "") {
    throw new Error("hookd needs a token: the admin token or a tenant token");
  }
  const value = `Bearer ${token}`;
  return (next) => (request) => {
    request.header.set("authorization", value);
    return next(request);
  };
}
