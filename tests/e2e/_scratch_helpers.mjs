// End-to-end: sandgate as an OAuth 2.1 resource server, with a real authorization server
// (oidc-provider, in this process) and the official MCP SDK clients' own OAuth support. Nothing
// is stubbed: the clients find the authorization server through the gateway's 401 and its
// protected resource metadata (RFC 9728), register themselves (RFC 7591), get a code with PKCE
// for sandgate's resource indicator (RFC 8707) and present the JWT access token (RFC 9068) the
// gateway verifies with the keys it discovered from the issuer. The same gateway also serves a
// static token, and static-token clients must not notice the OAuth mode.
//
// Runs on Node 20 and 22: from tests/e2e, `node --test oauth_flow.test.mjs` (oidc-provider 9
// prints an "Unsupported runtime" warning on Node 20 and works), or
// `node_modules/.bin/node --test oauth_flow.test.mjs`.
import assert from "node:assert/strict";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import Provider from "oidc-provider";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as StreamableHTTPClientTransportV2,
  UnauthorizedError as UnauthorizedErrorV2,
} from "@modelcontextprotocol/client";
import { startGateway } from "./gateway.mjs";

const SCOPE = "sandgate:execute";
const STATIC_TOKEN = "e2e-static-token";
const ACCOUNT = "alice";
// The redirect URI the clients register: a loopback one, as a native client's would be (RFC
// 8252). Nothing listens there: the test's user agent stops at the redirect and reads the code.
const REDIRECT_URI = "http://127.0.0.1/oauth/callback";

export let issuer; // the authorization server: { url, provider, interactions, stop }
export let gateway;
export let resourceUrl; // the gateway's MCP endpoint, its resource identifier and tokens' audience

// The gateway's resource URL must be the URL clients connect to (the SDK refuses metadata whose
// `resource` is not the server URL), so its port is chosen before it starts.
async function freePort() {
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startAuthorizationServer(resource) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // A real RS256 signing key, so the gateway verifies with the key it fetched from jwks_uri.
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: "jwk" }), kid: "e2e-rs256", alg: "RS256", use: "sig" };
  const interactions = []; // the prompts the user agent answered, in order
  const provider = new Provider(url, {
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString("hex")] },
    // The resource scope is listed here too: dynamic registration checks a client's `scope`
    // against the server's scopes.
    scopes: ["openid", "offline_access", SCOPE],
    clientDefaults: { token_endpoint_auth_method: "none", grant_types: ["authorization_code"] },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true }, // open registration, as MCP clients expect
      resourceIndicators: {
        enabled: true,
        // A client that names no resource gets sandgate's, and keeps it for refreshes.
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          if (indicator !== resource) throw new Provider.errors.InvalidTarget();
          return {
            scope: SCOPE,
            audience: resource,
            accessTokenTTL: 300,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "RS256" } },
          };
        },
      },
    },
    findAccount: (ctx, accountId) => ({ accountId, claims: () => ({ sub: accountId }) }),
    // The user agent lands here; this "user" logs in as alice and grants what is asked.
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  provider.use(async (ctx, next) => {
    if (!ctx.path.startsWith("/interaction/")) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session, grantId } = details;
    interactions.push({ prompt: prompt.name, resource: params.resource, scope: params.scope });
    let result;
    if (prompt.name === "login") {
      result = { login: { accountId: ACCOUNT } };
    } else if (prompt.name === "consent") {
      const grant = grantId
        ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const missing = prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
        grant.addResourceScope(indicator, scopes.join(" "));
      result = { consent: { grantId: await grant.save() } };
    } else {
      throw new Error(`unexpected prompt ${prompt.name}`);
    }
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
    ctx.status = 303;
    ctx.set("Location", returnTo);
  });
  const server = http.createServer(provider.callback());
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  return {
    url,
    provider,
    interactions,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

// A browser without a person: follows the authorization server's redirects with its cookies
// until the redirect to the client's redirect URI, and returns that URL's query (code, state,
// iss). No page needs a click: the interaction route above answers each prompt.
async function userAgent(authorizationUrl) {
  const cookies = new Map();
  let url = new URL(authorizationUrl);
  for (let hops = 0; hops < 10; hops++) {
    if (`${url.origin}${url.pathname}` === REDIRECT_URI) return url.searchParams;
    assert.equal(url.origin, issuer.url, "the user agent stays on the authorization server until the callback");
    const response = await fetch(url, {
      redirect: "manual",
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; ") },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      const [name, value] = [pair.slice(0, at), pair.slice(at + 1)];
      if (value) cookies.set(name, value);
      else cookies.delete(name);
    }
    const location = response.headers.get("location");
    await response.body?.cancel();
    // The path only: a query here holds codes.
    assert.ok(location, `redirect expected from ${url.pathname}, got ${response.status}`);
    url = new URL(location, url);
  }
  throw new Error("too many redirects");
}

// The client side's storage, in memory, for one user of one MCP client: what the SDK's
// OAuthClientProvider asks for (v1 and v2 have the same shape; v2 passes extra context).
class InMemoryOAuthClient {
  constructor(name) {
    this.name = name;
    this.callbacks = []; // each authorization's callback query (code, state, iss)
  }
  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    this.expectedState = randomBytes(16).toString("hex");
    return this.expectedState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(client) {
    this.client = client;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.authorizationUrl = new URL(authorizationUrl);
    const callback = await userAgent(authorizationUrl);
    assert.equal(callback.get("state"), this.expectedState, "the state came back");
    this.callbacks.push(callback);
  }
}

// Records each HTTP exchange a client makes: method, origin + path (never a query or a header:
// those carry codes and tokens) and status.
function recordingFetch() {
  const seen = [];
  const wrapped = async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : input);
    seen.push(`${init?.method ?? "GET"} ${url.origin}${url.pathname} ${response.status}`);
    return response;
  };
  return { fetch: wrapped, seen };
}

function jwtParts(token) {
  const [header, payload] = token.split(".").slice(0, 2).map((p) => JSON.parse(Buffer.from(p, "base64url")));
  return { header, payload };
}

async function metric(name) {
  const text = await (await fetch(`${gateway.base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}


export { freePort, startAuthorizationServer, userAgent, InMemoryOAuthClient, recordingFetch, jwtParts, metric };
export function setIssuer(i) { issuer = i; }
export function setGateway(g) { gateway = g; }
