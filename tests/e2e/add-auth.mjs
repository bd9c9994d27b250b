// Preloaded into the conformance suite (NODE_OPTIONS=--import): its clients send no token, so
// every fetch gets the gateway's bearer token added.
const token = process.env.SANDGATE_E2E_TOKEN;
const original = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
  return original(input, { ...init, headers });
};
