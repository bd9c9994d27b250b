// Preloaded into the conformance suite (NODE_OPTIONS=--import): its clients send no token, so
// every request it makes gets the gateway's bearer token added. The suite sends requests three
// ways, all covered: global fetch (most scenarios, and the v1 SDK transport), node:http
// request (http-header-validation, http-custom-header-server-validation) and undici's request
// (dns-rebinding-protection). A request that already carries Authorization is left alone.
import http from "node:http";
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";

const token = process.env.SANDGATE_E2E_TOKEN;
if (token) {
  const bearer = `Bearer ${token}`;
  const hasAuth = (headers) => Object.keys(headers ?? {}).some((k) => k.toLowerCase() === "authorization");

  const originalFetch = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has("authorization")) headers.set("authorization", bearer);
    return originalFetch(input, { ...init, headers });
  };

  const originalRequest = http.request;
  http.request = function (options, ...rest) {
    if (options && typeof options === "object" && !(options instanceof URL) && !hasAuth(options.headers))
      options = { ...options, headers: { ...options.headers, Authorization: bearer } };
    return originalRequest.call(this, options, ...rest);
  };

  // The suite imports undici's `request` by name, so patch the undici instance it will resolve
  // (from the CLI's own file, process.argv[1]) before its ES module facade is created.
  let undici;
  try {
    undici = createRequire(realpathSync(process.argv[1]))("undici");
  } catch {
    undici = undefined; // not the conformance CLI (no script, or no undici next to it)
  }
  if (undici) {
    const originalUndici = undici.request;
    undici.request = (url, opts = {}) =>
      originalUndici(url, hasAuth(opts.headers) ? opts : { ...opts, headers: { ...opts.headers, authorization: bearer } });
  }
}
