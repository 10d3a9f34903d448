// A real OAuth 2.1 authorization server for the OAuth tests: oidc-provider (the certified
// OpenID Connect implementation, pinned in package.json) on loopback, with what MCP's
// authorization specification asks of one (RFC 8414 and OpenID discovery, dynamic client
// registration, PKCE S256, RFC 8707 resource indicators with JWT access tokens for the
// resource, RFC 9207 iss in the authorization response, refresh tokens, revocation). Only the
// user's side is automated: interactions finish at once, as the user the "browser" names.
//
//   node oauth-as.mjs serve PORT [--access-ttl SECONDS] [--groups "alice=staff,admins;bob=staff"]
//       Prints "ready ISSUER" when it listens. POST /test/revoke?account=NAME destroys every
//       grant and token of NAME (a refresh token revoked behind the client's back).
//   node oauth-as.mjs browse URL [--user NAME] [--deny]
//       The user's browser: GETs URL, follows redirects with cookies and X-Test-User: NAME
//       (default alice), and requests the last one (the loopback redirect URI) too. Exits 0
//       when that last answer was a 2xx.
//   node oauth-as.mjs token ISSUER --resource URL [--user NAME] [--scope SCOPE]
//       Prints an access token for NAME and the resource, got by a real authorization code
//       flow with PKCE by a client it registers: what a front door test presents.
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

const args = process.argv.slice(2);
const option = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const b64url = (buf) => buf.toString("base64url");

// ---- serve ----

// Every model's records in one map, so that /test/revoke can find an account's.
const records = new Map();
class MemoryAdapter {
    constructor(model) { this.model = model; }
    key(id) { return `${this.model}:${id}`; }
    async upsert(id, payload, expiresIn) {
        records.set(this.key(id), { payload, exp: expiresIn ? Date.now() + expiresIn * 1000 : 0 });
    }
    async find(id) {
        const r = records.get(this.key(id));
        if (!r || (r.exp && r.exp < Date.now())) return undefined;
        return r.payload;
    }
    async findBy(field, value) {
        for (const [k, r] of records)
            if (k.startsWith(`${this.model}:`) && r.payload[field] === value) return r.payload;
        return undefined;
    }
    findByUid(uid) { return this.findBy("uid", uid); }
    findByUserCode(code) { return this.findBy("userCode", code); }
    async consume(id) {
        const r = records.get(this.key(id));
        if (r) r.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id) { records.delete(this.key(id)); }
    async revokeByGrantId(grantId) {
        for (const [k, r] of records) if (r.payload.grantId === grantId) records.delete(k);
    }
}

function parseGroups(text) {
    const groups = new Map();
    for (const entry of (text || "").split(";").filter(Boolean)) {
        const [user, list] = entry.split("=");
        groups.set(user, (list || "").split(",").filter(Boolean));
    }
    return groups;
}

async function serve() {
    const port = Number(args[1]);
    const ttl = Number(option("--access-ttl", "60"));
    const groups = parseGroups(option("--groups", ""));
    const issuer = `http://127.0.0.1:${port}`;
    // Fresh keys at each start: a restarted server is a key rotation.
    const { privateKey } = await generateKeyPair("RS256", { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: b64url(randomBytes(8)), alg: "RS256", use: "sig" };

    const provider = new Provider(issuer, {
        adapter: MemoryAdapter,
        jwks: { keys: [jwk] },
        cookies: { keys: [b64url(randomBytes(16))] },
        findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
        scopes: ["openid", "offline_access", "mcp", "mcp:write"],
        clientDefaults: {
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
            token_endpoint_auth_method: "none",
        },
        features: {
            devInteractions: { enabled: false },
            registration: { enabled: true },
            revocation: { enabled: true },
            resourceIndicators: {
                enabled: true,
                defaultResource: (ctx, client, oneOf) => (oneOf ? oneOf[0] : undefined),
                useGrantedResource: () => true,
                getResourceServerInfo: (ctx, resource) => {
                    if (!/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(resource))
                        throw new Provider.errors.InvalidTarget();
                    return { scope: "mcp mcp:write", audience: resource, accessTokenTTL: ttl, accessTokenFormat: "jwt",
                        jwt: { sign: { alg: "RS256" } } };
                },
            },
        },
        extraTokenClaims: async (ctx, token) =>
            token.accountId && groups.has(token.accountId) ? { groups: groups.get(token.accountId) } : undefined,
        issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
        ttl: { AccessToken: ttl, RefreshToken: 86400, Grant: 86400, Interaction: 600, Session: 3600 },
        interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
        rotateRefreshToken: true,
    });
    provider.proxy = false;
    const callback = provider.callback();

    const server = createServer(async (req, res) => {
        try {
            const url = new URL(req.url, issuer);
            if (url.pathname.startsWith("/interaction/")) return await interaction(provider, req, res);
            if (url.pathname === "/test/revoke" && req.method === "POST") {
                const account = url.searchParams.get("account");
                let n = 0;
                for (const [k, r] of records)
                    if (r.payload.accountId === account) { records.delete(k); n++; }
                res.writeHead(200, { "content-type": "text/plain" }).end(`revoked ${n}\n`);
                return;
            }
            callback(req, res);
        } catch (e) {
            process.stderr.write(`oauth-as: ${e.stack || e}\n`);
            if (!res.headersSent) res.writeHead(500).end();
        }
    });
    server.listen(port, "127.0.0.1", () => process.stdout.write(`ready ${issuer}\n`));
}

// The user logs in as X-Test-User and consents to everything asked, at once.
async function interaction(provider, req, res) {
    const details = await provider.interactionDetails(req, res);
    const { prompt, params } = details;
    if (req.headers["x-test-deny"]) {
        await provider.interactionFinished(req, res, { error: "access_denied", error_description: "the user said no" },
            { mergeWithLastSubmission: false });
        return;
    }
    if (prompt.name === "login") {
        const accountId = String(req.headers["x-test-user"] || "alice");
        await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
        return;
    }
    const grant = details.grantId ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes || {}))
        grant.addResourceScope(resource, scopes.join(" "));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

// ---- browse ----

// Follows redirects as a browser would, with cookies, until an answer that is not one.
// Returns [the last answer, its URL].
async function follow(start, user, extra = {}) {
    const jar = new Map();
    let url = start;
    for (let hop = 0; hop < 20; hop++) {
        const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
        const res = await fetch(url, { redirect: "manual",
            headers: { "x-test-user": user, ...extra, ...(cookie ? { cookie } : {}) } });
        for (const c of res.headers.getSetCookie()) {
            const [pair] = c.split(";");
            const eq = pair.indexOf("=");
            jar.set(pair.slice(0, eq), pair.slice(eq + 1));
        }
        const location = res.headers.get("location");
        if (res.status < 300 || res.status >= 400 || !location) return [res, url];
        await res.arrayBuffer();
        url = new URL(location, url).href;
    }
    throw new Error("too many redirects");
}

async function browse() {
    const [res, last] = await follow(args[1], option("--user", "alice"), args.includes("--deny") ? { "x-test-deny": "1" } : {});
    const body = await res.text();
    process.stderr.write(`oauth-as browse: ${res.status} from ${new URL(last).origin}${new URL(last).pathname}\n`);
    if (res.status < 200 || res.status >= 300) process.stderr.write(`${body.slice(0, 500)}\n`);
    process.exit(res.status >= 200 && res.status < 300 ? 0 : 1);
}

// ---- token ----

async function token() {
    const issuer = args[1];
    const resource = option("--resource");
    const scope = option("--scope", "mcp");
    const redirect = "http://127.0.0.1:9/cb";
    const meta = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
    const reg = await (await fetch(meta.registration_endpoint, { method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: [redirect], application_type: "native", token_endpoint_auth_method: "none",
            grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], client_name: "oauth-as token" }) })).json();
    const verifier = b64url(randomBytes(32));
    const auth = new URL(meta.authorization_endpoint);
    const q = { response_type: "code", client_id: reg.client_id, redirect_uri: redirect, scope, resource, state: "s",
        code_challenge: b64url(createHash("sha256").update(verifier).digest()), code_challenge_method: "S256" };
    for (const [k, v] of Object.entries(q)) auth.searchParams.set(k, v);
    // The redirect URI is never requested: its code is read off the last Location.
    const jar = new Map();
    let url = auth.href, code;
    for (let hop = 0; hop < 20 && !code; hop++) {
        const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
        const res = await fetch(url, { redirect: "manual",
            headers: { "x-test-user": option("--user", "alice"), ...(cookie ? { cookie } : {}) } });
        for (const c of res.headers.getSetCookie()) {
            const [pair] = c.split(";");
            jar.set(pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1));
        }
        const location = res.headers.get("location");
        if (!location) throw new Error(`no redirect from ${url}: ${res.status} ${await res.text()}`);
        url = new URL(location, url).href;
        if (url.startsWith(redirect)) {
            code = new URL(url).searchParams.get("code");
            if (!code) throw new Error(`no code: ${url}`);
        }
    }
    const res = await fetch(meta.token_endpoint, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirect, client_id: reg.client_id,
            code_verifier: verifier, resource }) });
    const body = await res.json();
    if (!body.access_token) throw new Error(`token endpoint: ${JSON.stringify(body)}`);
    process.stdout.write(`${body.access_token}\n`);
}

const commands = { serve, browse, token };
if (!commands[args[0]]) {
    process.stderr.write("usage: oauth-as.mjs serve PORT | browse URL | token ISSUER --resource URL\n");
    process.exit(2);
}
await commands[args[0]]();
