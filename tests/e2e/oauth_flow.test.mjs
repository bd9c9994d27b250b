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
import { after, before, describe, test } from "node:test";
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

let issuer; // the authorization server: { url, provider, interactions, stop }
let gateway;
let resourceUrl; // the gateway's MCP endpoint, its resource identifier and tokens' audience

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

before(async () => {
  const gatewayPort = await freePort();
  resourceUrl = `http://127.0.0.1:${gatewayPort}/mcp`;
  // The authorization server first: the gateway fetches its keys as it starts.
  issuer = await startAuthorizationServer(resourceUrl);
  gateway = await startGateway(
    [
      "--listen", `127.0.0.1:${gatewayPort}`, // after startGateway's own --listen: the later flag wins
      "--oauth-issuer", issuer.url,
      "--resource-url", resourceUrl,
      "--oauth-scopes", SCOPE,
    ],
    { SANDGATE_TOKEN: STATIC_TOKEN },
  );
  assert.equal(gateway.url.href, resourceUrl);
});
after(async () => {
  if (gateway) assert.equal(await gateway.stop(), 0);
  await issuer?.stop();
});

describe("the v1 SDK client (@modelcontextprotocol/sdk) with its OAuth provider", () => {
  test("401 → metadata → registration → authorization with PKCE → token → execute", async () => {
    const oauth = new InMemoryOAuthClient("sandgate-e2e-v1");
    const recorder = recordingFetch();
    const first = new StreamableHTTPClientTransport(gateway.url, { authProvider: oauth, fetch: recorder.fetch });
    // The first connect gets the 401 and ends at the authorization redirect: the SDK cannot
    // finish by itself, the code comes back through the redirect URI.
    await assert.rejects(new Client({ name: "sandgate-e2e", version: "1.0.0" }).connect(first), UnauthorizedError);
    assert.equal(oauth.callbacks.length, 1);
    await first.finishAuth(oauth.callbacks[0].get("code"));

    // The whole discovery went through the gateway's challenge and metadata (finishAuth runs
    // discovery again: this provider keeps no discovery state).
    const discovery = [
      `GET ${gateway.base}/.well-known/oauth-protected-resource/mcp 200`,
      `GET ${issuer.url}/.well-known/oauth-authorization-server 200`,
    ];
    assert.deepEqual(recorder.seen, [
      `POST ${resourceUrl} 401`,
      ...discovery,
      `POST ${issuer.url}/reg 201`,
      ...discovery,
      `POST ${issuer.url}/token 200`,
    ]);
    const asked = oauth.authorizationUrl.searchParams;
    assert.equal(asked.get("resource"), resourceUrl, "the resource indicator is the gateway's resource URL");
    assert.equal(asked.get("scope"), SCOPE, "the scope comes from the gateway's challenge");
    assert.equal(asked.get("code_challenge_method"), "S256");
    assert.deepEqual(issuer.interactions.slice(-2).map((i) => i.prompt), ["login", "consent"]);

    // What the client holds: a JWT access token for the gateway, from this issuer, for alice.
    const tokens = oauth.tokens();
    assert.equal(tokens.token_type.toLowerCase(), "bearer");
    const { header, payload } = jwtParts(tokens.access_token);
    assert.equal(header.alg, "RS256");
    assert.equal(header.typ, "at+jwt");
    assert.equal(payload.iss, issuer.url);
    assert.deepEqual([payload.aud].flat(), [resourceUrl]);
    assert.equal(payload.sub, ACCOUNT);
    assert.equal(payload.scope, SCOPE);

    const jwtOkBefore = await metric('sandgate_auth_total{kind="jwt",outcome="ok"}');
    const client = new Client({ name: "sandgate-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(gateway.url, { authProvider: oauth }));
    const result = await client.callTool({ name: "execute", arguments: { code: "print(6*7)" } });
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(result.structuredContent.stdout, "42\n");
    await client.close();
    assert.ok(await metric('sandgate_auth_total{kind="jwt",outcome="ok"}') > jwtOkBefore);
  });
});

describe("the v2 client (@modelcontextprotocol/client) with its OAuth provider", () => {
  test("the same flow in the 2026-07-28 era, and the callback's iss is checked (RFC 9207)", async () => {
    const oauth = new InMemoryOAuthClient("sandgate-e2e-v2");
    const recorder = recordingFetch();
    const connect = (transport) =>
      new ClientV2({ name: "sandgate-e2e-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
        .connect(transport)
        .then(() => transport);
    const first = new StreamableHTTPClientTransportV2(gateway.url, { authProvider: oauth, fetch: recorder.fetch });
    await assert.rejects(connect(first), UnauthorizedErrorV2);
    assert.equal(oauth.callbacks.length, 1);
    const callback = oauth.callbacks[0];
    assert.equal(callback.get("iss"), issuer.url, "oidc-provider names itself in the callback");
    // The whole callback query: v2 compares its iss with the issuer it discovered.
    await first.finishAuth(callback);
    assert.deepEqual(recorder.seen.slice(0, 2), [
      `POST ${resourceUrl} 401`,
      `GET ${gateway.base}/.well-known/oauth-protected-resource/mcp 200`,
    ]);
    assert.ok(recorder.seen.includes(`POST ${issuer.url}/reg 201`));
    assert.equal(recorder.seen.at(-1), `POST ${issuer.url}/token 200`);
    assert.equal(oauth.authorizationUrl.searchParams.get("resource"), resourceUrl);
    const { payload } = jwtParts(oauth.tokens().access_token);
    assert.deepEqual([payload.aud].flat(), [resourceUrl]);

    const client = new ClientV2(
      { name: "sandgate-e2e-v2", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new StreamableHTTPClientTransportV2(gateway.url, { authProvider: oauth }));
    assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
    const result = await client.callTool({ name: "execute", arguments: { code: "print(6*7)" } });
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal(result.structuredContent.stdout, "42\n");
    await client.callTool({ name: "end_sandbox", arguments: { sandbox_id: result.structuredContent.sandbox_id } });
    await client.close();
  });
});
