// A real OpenID Connect provider for the SSO tests: the npm `oidc-provider` package
// (pinned by the Makefile), with its development login form. Its accounts are read from
// OIDC_USERS (a JSON file of {login: claims}) at every sign-in, so a test changes a
// person's groups, or removes them, between two sign-ins. Any password is accepted; an
// account not in the file is refused by the provider.
import fs from "node:fs";
import { pathToFileURL } from "node:url";

// The package installed into the Makefile's cache (ESM ignores NODE_PATH).
const { default: Provider } = await import(pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href);

const issuer = process.env.OIDC_ISSUER;
const redirectUri = process.env.OIDC_REDIRECT_URI;

function accounts() {
  return JSON.parse(fs.readFileSync(process.env.OIDC_USERS, "utf8"));
}

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "agentweb",
      client_secret: "agentweb-test-secret",
      redirect_uris: [redirectUri],
      post_logout_redirect_uris: [redirectUri.replace(/\/oidc\/callback\/$/, "/login/")],
      token_endpoint_auth_method: "client_secret_post",
    },
  ],
  // Every authorization request must carry a PKCE challenge (S256).
  pkce: { required: () => true },
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["preferred_username", "given_name", "family_name", "name"],
    groups: ["groups"],
  },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ["agentweb-test-cookie-key"] },
  async findAccount(ctx, id) {
    const claims = accounts()[id];
    if (!claims) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
  },
});

const server = provider.listen(Number(process.env.OIDC_PORT), "127.0.0.1", () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
